// The subject's identity inside the environment: a `docker exec -u` spec resolved from this environment's
// /etc/passwd and /etc/group (policy/user_spec), and the switch to it in a child before exec.
//
// A root supervisor drops the subject to that identity: supplementary groups, gid, then uid, so that the
// subject holds exactly what a plain `docker exec -u USER` would have given it (a non-root uid keeps no
// capability). A helper that is not root can only run the subject as itself.
#pragma once

#include "policy/user_spec.hpp"

#include <string>
#include <sys/types.h>
#include <vector>

#include <boost/system/result.hpp>

namespace maka_eval::in_container {

// The identity for `spec`; an error message a person can act on when it cannot be used here.
[[nodiscard]] boost::system::result<policy::subject_identity, std::string>
resolve_subject_user(const std::string& spec);

// In a forked child only: setgroups, setgid, setuid (async-signal-safe; `groups` prepared before fork).
// No-op when the identity is already ours; a root that already has the uid and gid but may not set groups
// (no CAP_SETGID: --cap-drop ALL, or no-new-privileges in a container whose user is not root) keeps the
// groups its exec gave it. False with errno on failure, and `failed_call` naming the call that failed.
[[nodiscard]] bool become(const policy::subject_identity& identity, const std::vector<gid_t>& groups,
                          const char** failed_call = nullptr);
// Why this helper cannot switch identities, in words ("root here lacks CAP_SETUID/CAP_SETGID (…)"); empty
// when it can.
[[nodiscard]] std::string privilege_limits();
[[nodiscard]] std::vector<gid_t> group_list(const policy::subject_identity& identity);

} // namespace maka_eval::in_container
