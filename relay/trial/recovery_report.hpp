// What the trial says after its supervisor vanished: one sentence per way the recovery can end.
//
// The evidence for each comes from the backend (`recovery`, backend.hpp); the words are here, once, so that
// the log's `recovered how=…` and the outcome's message agree and never accuse the subject without it.
#pragma once

#include "relay/trial/backend.hpp"

#include <string>
#include <string_view>

namespace maka_eval::relay {

struct recovery_report {
    std::string_view how; // the `recovered` phase's field; empty: nothing was recovered (destroy follows)
    std::string message;  // the outcome's sentence, after "Maka Eval subject execution failed: "
    bool let_session_go = false; // the helper is frozen or unreachable: its session is dropped, not awaited
};

// `what`: what became of the supervisor ("vanished without a report …", or the engine's evidence);
// `staged`: where a root supervisor left what the subject wrote, or empty.
[[nodiscard]] recovery_report report_recovery(recovery outcome, const std::string& what,
                                              const std::string& staged);

// How a signed result names the trial's end after a recovery ("settled", "environment-gone", …).
[[nodiscard]] std::string_view ending_of(recovery outcome);

} // namespace maka_eval::relay
