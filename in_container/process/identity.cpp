// Resolving and taking on the subject's identity (see identity.hpp).
#include "in_container/process/identity.hpp"

#include "in_container/base/io.hpp"
#include "policy/capabilities.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <grp.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

// The helper's own /proc/self/status, for the capability sets and NoNewPrivs.
std::string own_status() {
    const auto read = read_file("/proc/self/status", 1 << 16);
    return read ? *read : std::string();
}

// CAP_SETGID (6) and CAP_SETUID (7) in the effective set of a /proc/PID/status text: a root without them
// cannot drop to another user.
bool may_switch_identity(const std::string& status = own_status()) {
    // The same reading of the capability sets as the egress gate's.
    for (const auto& [name, value] : policy::parse_status(status)) {
        if (name == "CapEff") {
            constexpr std::uint64_t needed = (std::uint64_t{1} << 6U) | (std::uint64_t{1} << 7U);
            const auto effective = policy::parse_hex(value);
            return effective && (*effective & needed) == needed;
        }
    }
    return false;
}

} // namespace

std::string privilege_limits() {
    if (::geteuid() != 0) {
        return "the helper runs as uid " + std::to_string(::geteuid()) + ", not root";
    }
    const std::string status = own_status();
    if (may_switch_identity(status)) {
        return {};
    }
    // no_new_privs keeps an exec as root from gaining capabilities at execve when the container's own
    // process holds none (a non-root USER, or --cap-drop ALL): the usual hardening, so name it.
    const bool no_new_privs = status.find("\nNoNewPrivs:\t1") != std::string::npos;
    return std::string("root here lacks CAP_SETUID/CAP_SETGID (") +
           (no_new_privs
                ? "the container runs with no-new-privileges, so a root exec gains no capability its "
                  "user lacks; or --cap-drop took them"
                : "the container was started with --cap-drop") +
           ")";
}

boost::system::result<policy::subject_identity, std::string> resolve_subject_user(const std::string& spec) {
    // A FROM-scratch image may have neither file: numeric ids still resolve, names do not.
    const auto passwd_read = read_file("/etc/passwd", std::size_t{4} << 20U);
    const auto group_read = read_file("/etc/group", std::size_t{4} << 20U);
    const std::string passwd = passwd_read ? *passwd_read : std::string();
    const std::string group = group_read ? *group_read : std::string();
    auto identity = policy::resolve_user(spec, passwd, group);
    if (!identity) {
        // The engine's own wording, so the message reads as `docker exec -u` would have said it.
        const bool about_group = identity.error() == policy::user_error::unknown_group;
        const auto name = about_group ? spec.substr(spec.find(':') + 1) : spec.substr(0, spec.find(':'));
        return "unable to find " + std::string(about_group ? "group " : "user ") + name + ": " +
               identity.error().message();
    }
    if (::geteuid() == 0 && (identity->uid != 0 || identity->gid != ::getegid()) && !may_switch_identity()) {
        return privilege_limits() + ": cannot start the subject as " + spec;
    }
    if (::geteuid() != 0 && identity->uid != ::geteuid()) {
        return "the helper runs as uid " + std::to_string(::geteuid()) + " and cannot start the subject as " +
               spec + " (the supervisor needs root for that)";
    }
    return *identity;
}

std::vector<gid_t> group_list(const policy::subject_identity& identity) {
    return {identity.groups.begin(), identity.groups.end()};
}

bool become(const policy::subject_identity& identity, const std::vector<gid_t>& groups,
            const char** failed_call) {
    const auto failed = [&](const char* call) {
        if (failed_call != nullptr) {
            *failed_call = call;
        }
        return false;
    };
    if (::geteuid() != 0) {
        return identity.uid == ::geteuid() || failed("setuid"); // nothing to change, or nothing we may change
    }
    const bool already = identity.uid == ::geteuid() && identity.gid == ::getegid();
    if (::setgroups(groups.size(), groups.data()) != 0 && !(already && errno == EPERM)) {
        return failed("setgroups");
    }
    if (::setgid(identity.gid) != 0) {
        return failed("setgid");
    }
    return ::setuid(identity.uid) == 0 || failed("setuid");
}

} // namespace maka_eval::in_container
