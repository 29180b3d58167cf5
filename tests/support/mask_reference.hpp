// The masker's reference, for the unit tests and the fuzz target alike: every occurrence of every form of
// every secret marked in the whole text, each run of marked bytes one "***". Slow and obviously right.
#pragma once

#include "contracts/secret_mask.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace maka_eval::testing {

inline std::string reference_mask(std::string_view text, const std::vector<std::string_view>& secrets) {
    using contracts::secret_masker;
    std::vector<bool> marked(text.size(), false);
    for (const auto secret : secrets) {
        if (secret.size() < secret_masker::min_secret_bytes) {
            continue;
        }
        std::vector<std::string> forms{std::string(secret)};
        for (auto& form : contracts::secret_forms(secret)) {
            if (form.size() >= secret_masker::min_secret_bytes) {
                forms.push_back(std::move(form));
            }
        }
        for (const auto& form : forms) {
            for (auto at = text.find(form); at != std::string_view::npos; at = text.find(form, at + 1)) {
                for (std::size_t i = at; i < at + form.size(); ++i) {
                    marked[i] = true;
                }
            }
        }
    }
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (!marked[i]) {
            out.push_back(text[i]);
        } else if (i == 0 || !marked[i - 1]) {
            out += secret_masker::replacement;
        }
    }
    return out;
}

} // namespace maka_eval::testing
