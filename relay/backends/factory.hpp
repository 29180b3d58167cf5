// The backend the options name: the one place that knows every backend (the trial knows only the interface).
#pragma once

#include "relay/backends/backend_options.hpp"
#include "relay/trial/backend.hpp"

#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::relay {

[[nodiscard]] boost::system::result<std::unique_ptr<backend>, relay_error>
make_backend(const backend_options& options, asio::any_io_executor executor);

} // namespace maka_eval::relay
