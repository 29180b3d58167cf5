// Starting the helper and its handshake (see helper_start.hpp).
#include "relay/backends/helper_start.hpp"

namespace maka_eval::relay {

start_remedy remedy_for(const start_attempt& failed, const start_history& history) {
    if (failed.identity_refused) {
        // Root without the capabilities to switch users (--cap-drop ALL): the whole session then runs as the
        // subject's user, as before — the relay logs that mode.
        return start_remedy::as_subject;
    }
    if (!history.ours) {
        return start_remedy::none; // a helper the user mounted is theirs to fix
    }
    if (failed.exit_code == 126 && history.can_mark_executable && !history.made_executable) {
        return start_remedy::make_executable; // a runner whose upload dropped the mode bits
    }
    const bool not_there = failed.exit_code == 127 || failed.exit_code == 126;
    // A streamed install that failed: no shell or tools to install with (a distroless image).
    return (not_there || failed.streamed) && !history.installed ? start_remedy::install : start_remedy::none;
}

asio::awaitable<boost::system::result<std::unique_ptr<helper_session>, relay_error>>
start_helper(std::function<asio::awaitable<start_attempt>()> attempt,
             std::function<asio::awaitable<boost::system::result<void, relay_error>>(start_remedy)> apply,
             start_history& history, std::string where) {
    for (int tries = 0; tries < 3; ++tries) {
        auto tried = co_await attempt();
        if (tried.session) {
            co_return std::move(tried.session);
        }
        if (tried.error) {
            co_return *tried.error;
        }
        const auto remedy = remedy_for(tried, history);
        if (remedy == start_remedy::none) {
            co_return relay_error{relay_errc::environment, "maka-eval-helper did not start " + where +
                                                               " (exit " + std::to_string(tried.exit_code) +
                                                               ")" +
                                                               (tried.said.empty() ? "" : ": " + tried.said)};
        }
        if (auto applied = co_await apply(remedy); !applied) {
            co_return applied.error();
        }
    }
    co_return relay_error{relay_errc::environment, "maka-eval-helper did not start " + where};
}

} // namespace maka_eval::relay
