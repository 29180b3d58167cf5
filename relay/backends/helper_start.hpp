// Starting the helper and its handshake, the one step the docker and bridge backends share: up to three
// attempts, each started by the backend its own way (docker: a session exec, perhaps carrying the helper on
// its stdin; bridge: the runner's exec of `probe`), and after each that did not say `hello`, one remedy
// chosen here by one policy — put the helper in when it was not found (exit 127), when it could not run
// (126; or marked executable where the backend can, once), when a streamed install failed; supervise as the
// subject's user when a root helper may not switch users — until a hello, a refusal, or nothing more to try.
#pragma once

#include "relay/support/error.hpp"
#include "relay/trial/backend.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::relay {

// What one attempt gave: a session (its hello said), a failure to report as it is, or how it failed.
struct start_attempt {
    std::unique_ptr<helper_session> session;
    std::optional<relay_error> error; // final: no remedy is tried
    int exit_code = 0;                // of what should have been the helper
    std::string said;                 // what it or the runtime printed instead of hello
    bool identity_refused = false;    // the helper, supervising as root, said it cannot switch users here
    bool streamed = false;            // the helper went in on the exec's stdin (docker's cold install)

    static start_attempt opened(std::unique_ptr<helper_session> session) {
        start_attempt a;
        a.session = std::move(session);
        return a;
    }
    static start_attempt refused(relay_error error) {
        start_attempt a;
        a.error = std::move(error);
        return a;
    }
};

enum class start_remedy { install, make_executable, as_subject, none };

// What has been tried in this open_session, and what this backend can do.
struct start_history {
    bool ours = true;             // the helper is this build's (not one the user mounted)
    bool installed = false;       // put in during this call
    bool made_executable = false; // marked executable during this call
    bool can_mark_executable = false;
};

[[nodiscard]] start_remedy remedy_for(const start_attempt& failed, const start_history& history);

// Runs `attempt` until it yields a session or an error, applying each failure's remedy in between (the
// backend's `apply` does it and updates `history`). `where`: "in container C", "in the environment".
// Taken by value: the coroutine keeps them for as long as it runs.
asio::awaitable<boost::system::result<std::unique_ptr<helper_session>, relay_error>>
start_helper(std::function<asio::awaitable<start_attempt>()> attempt,
             std::function<asio::awaitable<boost::system::result<void, relay_error>>(start_remedy)> apply,
             start_history& history, std::string where);

} // namespace maka_eval::relay
