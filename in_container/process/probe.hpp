// What the helper reports about where it runs: cwd, ids, the five capability sets, the network namespace.
// This is the evidence the relay's egress gate judges (policy/), gathered without a shell or any tool.
#pragma once

#include "contracts/session_messages.hpp"
#include "policy/user_spec.hpp"

#include <optional>
#include <string>

#include <boost/system/result.hpp>

namespace maka_eval::in_container {

[[nodiscard]] contracts::hello_message probe_self();

// The same evidence as the subject will see it: probed in a child that has taken on `identity` (its
// capability sets are what the kernel leaves a process after that switch). `supervisor_uid` is ours. The
// error says which step failed and why ("setgroups: Operation not permitted").
[[nodiscard]] boost::system::result<contracts::hello_message, std::string>
probe_as(const policy::subject_identity& identity);

} // namespace maka_eval::in_container
