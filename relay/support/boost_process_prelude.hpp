// What Boost.Process v2 (Boost 1.81, with BOOST_PROCESS_USE_STD_FS) needs included before itself: it uses
// boost::optional and boost type traits without including them. Include this first, before any header that
// may pull in Boost.Process, in every file that uses it.
#pragma once

#include <boost/optional.hpp>
#include <boost/type_traits.hpp>
