// Choosing the backend from --env (see factory.hpp).
#include "relay/backends/factory.hpp"

#include "relay/backends/bridge_backend.hpp"
#include "relay/backends/docker_backend.hpp"
#include "relay/backends/local_backend.hpp"

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

} // namespace maka_eval::relay
