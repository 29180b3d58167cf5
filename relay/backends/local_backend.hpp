// The local backend: no container. The helper runs as the relay's child on this host (Boost.Process v2),
// scope and artifacts go under a work directory. For trying the relay out and for the integration tests;
// it cannot check egress isolation (there is no policy sidecar, and it must not rewrite this host's
// /etc/hosts), so it refuses runs that require it.
#pragma once

#include "relay/backends/backend_options.hpp"
#include "relay/trial/backend.hpp"

namespace maka_eval::relay {

[[nodiscard]] boost::system::result<std::unique_ptr<backend>, relay_error>
make_local_backend(const local_options& options, asio::any_io_executor executor);

} // namespace maka_eval::relay
