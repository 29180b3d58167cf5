// Who the subject runs as: a `docker exec -u` user spec resolved against the environment's /etc/passwd and
// /etc/group text, the way the engine (runc's user lookup) resolves it.
//
// "name" or "uid", optionally ":group" or ":gid". A name must exist in passwd; a numeric uid need not (it
// then runs with gid 0 and HOME "/", as under Docker). Without an explicit group the user's primary gid
// applies plus every group that lists the user's name as a member; with one, exactly that group and no
// others. Pure: the helper reads the files (it is static, so getpwnam is not an option) and applies the
// result.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/system/result.hpp>

namespace maka_eval::policy {

struct subject_identity {
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    std::vector<std::uint32_t> groups; // supplementary
    std::string name;                  // empty when the uid has no passwd entry
    std::string home = "/";
    friend bool operator==(const subject_identity&, const subject_identity&) = default;
};

enum class user_error {
    empty_spec = 1, // "" or ":group"
    unknown_user,   // a name that passwd does not have
    unknown_group,  // a group name that /etc/group does not have
    malformed_spec, // more than one ':' or an id out of range
};
[[nodiscard]] const boost::system::error_category& user_category() noexcept;
[[nodiscard]] boost::system::error_code make_error_code(user_error e) noexcept;

[[nodiscard]] boost::system::result<subject_identity>
resolve_user(std::string_view spec, std::string_view passwd_text, std::string_view group_text);

} // namespace maka_eval::policy

template <>
struct boost::system::is_error_code_enum<maka_eval::policy::user_error> : std::true_type {};
