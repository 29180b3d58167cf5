// The backend --env names: the one place that knows every backend (the trial knows only the interface).
#pragma once

#include "relay/trial/backend.hpp"

#include <memory>

namespace maka_eval::relay {

[[nodiscard]] boost::system::result<std::unique_ptr<backend>, relay_error>
make_backend(const common_options& options, asio::any_io_executor executor);

} // namespace maka_eval::relay
