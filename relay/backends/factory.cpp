// Choosing the backend by its options (see factory.hpp).
#include "relay/backends/factory.hpp"

#include "relay/backends/bridge_backend.hpp"
#include "relay/backends/docker_backend.hpp"
#include "relay/backends/local_backend.hpp"

namespace maka_eval::relay {

boost::system::result<std::unique_ptr<backend>, relay_error> make_backend(const backend_options& options,
                                                                          asio::any_io_executor executor) {
    if (const auto* local = std::get_if<local_options>(&options)) {
        return make_local_backend(*local, std::move(executor));
    }
    if (const auto* docker = std::get_if<docker_options>(&options)) {
        return make_docker_backend(*docker, std::move(executor));
    }
    return make_bridge_backend(std::get<bridge_options>(options), std::move(executor));
}

} // namespace maka_eval::relay
