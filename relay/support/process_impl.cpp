// Boost.Process v2 compiled into the relay once. In 1.81 its header-only mode never includes
// impl/environment.ipp (process_environment::on_setup stays undefined), so it is built separately here,
// with std::filesystem (after the prelude that mode needs).
// clang-format off
#include "relay/support/boost_process_prelude.hpp" // first: see there
#include <boost/process/v2/src.hpp>
// clang-format on
