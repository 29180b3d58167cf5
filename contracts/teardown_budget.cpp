// The teardown budget's arithmetic (see teardown_budget.hpp).
#include "contracts/teardown_budget.hpp"

#include <algorithm>

namespace maka_eval::contracts {

milliseconds destroy_reserve(milliseconds budget) {
    return std::min(milliseconds(20'000), budget / 5);
}

settle_graces fit_graces(milliseconds budget, const settle_graces& configured) {
    const auto span = std::max(milliseconds(1), budget - destroy_reserve(budget));
    const auto share = [&](int percent) { return span * percent / 100; };
    return {std::min(configured.term, share(45)), std::min(configured.kill, share(25)),
            std::min(configured.drain, share(10))};
}

milliseconds watch_margin(milliseconds budget) {
    return destroy_reserve(budget) / 2;
}

milliseconds recovery_diagnosis_share(milliseconds settle_left) {
    return settle_left / 2;
}

milliseconds recovery_upload_share(milliseconds settle_left) {
    return settle_left / 3;
}

milliseconds cancel_term_share(milliseconds grace) {
    return grace / 2;
}

} // namespace maka_eval::contracts
