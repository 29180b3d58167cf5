// The docker backend: the subject runs in an existing container, reached through the Docker Engine API.
//
// The helper is put into the container once per build (one archive upload to a content-addressed path,
// skipped when that build is already there; /.maka-eval/maka-eval-helper links to the latest, for subjects
// that print their frame with `maka-eval-helper frame`), then one exec of `maka-eval-helper session` with
// stdin attached carries the whole trial. Closing that connection — a crashed or killed relay — half-closes
// the helper's stdin, which settles the subject (the dead-man switch). The egress gate adds a root exec of
// `pin-proxy` and one exec in the policy sidecar. Destroy (kill + remove) is only ever the last resort.
#pragma once

#include "relay/backends/backend_options.hpp"
#include "relay/trial/backend.hpp"

namespace maka_eval::relay {

[[nodiscard]] boost::system::result<std::unique_ptr<backend>, relay_error>
make_docker_backend(const docker_options& options, asio::any_io_executor executor);

} // namespace maka_eval::relay
