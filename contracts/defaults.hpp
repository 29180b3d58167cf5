// The relay's and helper's default durations, in one table.
//
// The relay's option parser starts from these, its usage text prints them, a `run` request that leaves a
// field out means them, and the docs quote them: a default changed here changes everywhere it is used.
#pragma once

#include <cstdint>

namespace maka_eval::contracts::defaults {

// What an orchestrator gives a cancelled subject to stop before the environment is destroyed.
inline constexpr std::int64_t teardown_timeout_ms = 110'000;
// Settling: TERM to the subject's scope, KILL after the TERM grace, give up after the KILL grace.
inline constexpr std::uint32_t term_grace_ms = 20'000;
inline constexpr std::uint32_t kill_grace_ms = 10'000;
// After the subject's leader exits, how long background holders of its pipes may keep them open.
inline constexpr std::uint32_t drain_ms = 2'000;
// How often a session helper says it is alive while the subject runs (the relay allows three missed beats).
inline constexpr std::uint32_t heartbeat_ms = 2'000;
// `maka-eval-helper cancel` run by hand without --grace-ms: TERM for half of it, then KILL (the relay always
// gives one, fitted to its teardown budget).
inline constexpr std::uint32_t cancel_grace_ms = 40'000;
// docker: how long an engine request, or an exec's first answer, may go unanswered.
inline constexpr std::uint32_t engine_timeout_ms = 30'000;

} // namespace maka_eval::contracts::defaults
