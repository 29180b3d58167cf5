// /proc status field parsing.
#include "contracts/proc_status.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

TEST_CASE("a kB field is read by its exact name") {
    const std::string_view status = "Name:\trelay\nVmPeak:\t  20000 kB\nVmHWM:\t    7800 kB\nVmHWMX:\t1 kB\n";
    CHECK(status_kib(status, "VmHWM") == 7800U);
    CHECK(status_kib(status, "VmPeak") == 20000U);
    CHECK_FALSE(status_kib(status, "VmRSS"));
    CHECK_FALSE(status_kib("VmHWM:\tlots kB\n", "VmHWM"));
}

TEST_CASE("this process has a peak resident set") {
    CHECK(peak_rss_kib() > 0U);
}

} // namespace
