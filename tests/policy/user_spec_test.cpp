// User specs resolved as `docker exec -u` resolves them (runc's lookup), against fixed passwd/group text.
#include "policy/user_spec.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::policy;

constexpr std::string_view passwd = "root:x:0:0:root:/root:/bin/sh\n"
                                    "# a comment\n"
                                    "agent:x:1000:1000:Agent:/home/agent:/bin/sh\n"
                                    "nohome:x:1001:1001::::\n"
                                    "broken line\n";
constexpr std::string_view group = "root:x:0:\n"
                                   "agent:x:1000:\n"
                                   "docker:x:999:agent,other\n"
                                   "audio:x:29:other\n"
                                   "video:x:44:agent\n";

TEST_CASE("a name: its uid, primary gid, HOME and the groups that list it") {
    const auto id = resolve_user("agent", passwd, group).value();
    CHECK(id.uid == 1000);
    CHECK(id.gid == 1000);
    CHECK(id.name == "agent");
    CHECK(id.home == "/home/agent");
    CHECK(id.groups == std::vector<std::uint32_t>{999, 44});
}

TEST_CASE("a uid with an entry is that entry, without one it runs with gid 0 and HOME /") {
    CHECK(resolve_user("1000", passwd, group).value().name == "agent");
    const auto bare = resolve_user("4242", passwd, group).value();
    CHECK(bare.uid == 4242);
    CHECK(bare.gid == 0);
    CHECK(bare.name.empty());
    CHECK(bare.home == "/");
    CHECK(bare.groups.empty());
    CHECK(resolve_user("nohome", passwd, group).value().home == "/");
}

TEST_CASE("an explicit group replaces the primary gid and drops supplementary groups") {
    const auto by_name = resolve_user("agent:audio", passwd, group).value();
    CHECK(by_name.gid == 29);
    CHECK(by_name.groups.empty());
    CHECK(resolve_user("agent:44", passwd, group).value().gid == 44);
    CHECK(resolve_user("1000:5000", passwd, group).value().gid == 5000); // numeric, no entry: allowed
    CHECK(resolve_user("root", passwd, group).value() == subject_identity{0, 0, {}, "root", "/root"});
}

TEST_CASE("unknown names and malformed specs are refused with a reason") {
    CHECK(resolve_user("nobody-here", passwd, group).error() == user_error::unknown_user);
    CHECK(resolve_user("agent:nogroup", passwd, group).error() == user_error::unknown_group);
    CHECK(resolve_user("", passwd, group).error() == user_error::empty_spec);
    CHECK(resolve_user(":0", passwd, group).error() == user_error::empty_spec);
    CHECK(resolve_user("agent:", passwd, group).error() == user_error::malformed_spec);
    CHECK(resolve_user("a:b:c", passwd, group).error() == user_error::malformed_spec);
    CHECK(resolve_user("99999999999", passwd, group).error() == user_error::unknown_user);
    // No files at all (a FROM-scratch image): numeric ids still work.
    CHECK(resolve_user("1000:1000", "", "").value().uid == 1000);
}

} // namespace
