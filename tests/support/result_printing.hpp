// Test support: lets doctest print boost::system::result values (Boost's own operator<< needs T printable).
#pragma once

#include <boost/system/result.hpp>
#include <doctest/doctest.h>

namespace doctest {

template <typename T, typename E>
struct StringMaker<boost::system::result<T, E>> {
    static String convert(const boost::system::result<T, E>& r) {
        return r.has_value() ? "result(value)" : "result(error)";
    }
};

} // namespace doctest
