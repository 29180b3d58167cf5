// The artifacts' receipt as JSON (see receipt.hpp).
#include "contracts/receipt.hpp"

#include <boost/json/array.hpp>

namespace maka_eval::contracts {

boost::json::object to_json(const std::vector<artifact_receipt>& artifacts) {
    boost::json::array list;
    for (const auto& a : artifacts) {
        boost::json::object entry{{"name", a.name},
                                  {"bytes", a.bytes},
                                  {"sha256", a.sha256},
                                  {"complete", a.complete},
                                  {"masked", a.masked}};
        if (!a.complete) {
            entry["incomplete"] = a.incomplete;
        }
        list.emplace_back(std::move(entry));
    }
    return {{"kind", "receipt"}, {"version", receipt_version}, {"artifacts", std::move(list)}};
}

} // namespace maka_eval::contracts
