// Boost.JSON compiled into this library once: no runtime library to ship with the static
// helper, and the fuzzers instrument the parser too.
#include <boost/json/src.hpp>
