// The bridge backend: the trial runs in the trial runner's own environment object (Harbor's or Pier's),
// reached through the Python adapter in relay/harbor over the socket passed as --bridge-fd.
//
// A trial runner's exec has no interactive stdin, so the helper session is emulated with non-interactive
// helper commands: `probe` for the hello, `run --request FILE` for the subject (the request uploaded 0600,
// unlinked by the helper before the subject starts), `cancel --scope FILE` to settle it. The helper is
// uploaded once per environment, content-addressed under /.maka-eval. Destroy is the runner's
// `stop(delete=True)`.
#pragma once

#include "relay/backends/backend_options.hpp"
#include "relay/trial/backend.hpp"

namespace maka_eval::relay {

[[nodiscard]] boost::system::result<std::unique_ptr<backend>, relay_error>
make_bridge_backend(const bridge_options& options, asio::any_io_executor executor);

} // namespace maka_eval::relay
