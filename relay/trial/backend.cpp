// What every backend shares: settling a scope whose supervisor is gone.
#include "relay/trial/backend.hpp"

#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {

asio::awaitable<recovery> backend::cancel_as_root(std::string scope, std::chrono::milliseconds budget) {
    // `cancel` exits 0 once the scope is quiet and 3 when nothing of it is left: both are settled.
    std::vector<std::string> args{"cancel", "--scope", std::move(scope), "--grace-ms",
                                  std::to_string(std::max<std::int64_t>(1, budget.count()))};
    auto answered = co_await run_helper_as_root(std::move(args), budget);
    co_return answered && (answered->exit_code == 0 || answered->exit_code == 3) ? recovery::settled
                                                                                 : recovery::failed;
}

} // namespace maka_eval::relay
