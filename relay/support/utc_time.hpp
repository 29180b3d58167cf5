// Wall-clock times as people and signed results read them: RFC 3339 in UTC.
//
// The trial's deadlines run on relay_clock (steady); these are only for what is written down: when a root
// subject took a container, and when a signed trial began and ended.
#pragma once

#include <string>

namespace maka_eval::relay {

// Now, to the second: "2026-12-07T04:05:06Z".
[[nodiscard]] std::string utc_now();
// Now, to the millisecond: "2026-12-07T04:05:06.789Z".
[[nodiscard]] std::string rfc3339_now();

} // namespace maka_eval::relay
