// Boost.Process v2 compiled into the relay once. In 1.81 its header-only mode never includes
// impl/environment.ipp (process_environment::on_setup stays undefined), so it is built separately here,
// with std::filesystem; that mode needs <boost/optional.hpp> and <boost/type_traits.hpp> first.
// clang-format off
#include <boost/optional.hpp>
#include <boost/type_traits.hpp>
#include <boost/process/v2/src.hpp>
// clang-format on
