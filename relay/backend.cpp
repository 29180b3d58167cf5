// What every backend shares: choosing one from --env, and settling a scope whose supervisor is gone.
#include "relay/backend.hpp"

#include "relay/bridge_backend.hpp"
#include "relay/docker_backend.hpp"
#include "relay/local_backend.hpp"

#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {

boost::system::result<std::unique_ptr<backend>, relay_error> make_backend(const common_options& options,
                                                                          asio::any_io_executor executor) {
    switch (options.backend) {
    case backend_kind::local:
        return make_local_backend(options, std::move(executor));
    case backend_kind::docker:
        return make_docker_backend(options, std::move(executor));
    case backend_kind::bridge:
        return make_bridge_backend(options, std::move(executor));
    }
    return relay_error{relay_errc::environment, "unknown backend"};
}

asio::awaitable<recovery> backend::cancel_as_root(std::string scope, std::chrono::milliseconds budget) {
    // `cancel` exits 0 once the scope is quiet and 3 when nothing of it is left: both are settled.
    std::vector<std::string> args{"cancel", "--scope", std::move(scope), "--grace-ms",
                                  std::to_string(std::max<std::int64_t>(1, budget.count()))};
    auto answered = co_await run_helper_as_root(std::move(args), budget);
    co_return answered && (answered->exit_code == 0 || answered->exit_code == 3) ? recovery::settled
                                                                                 : recovery::failed;
}

} // namespace maka_eval::relay
