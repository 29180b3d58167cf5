// Overwriting secrets in memory once they are no longer needed (credentials, `run` requests, tokens).
//
// OPENSSL_cleanse, unlike memset or std::fill, cannot be optimised away for a buffer about to be freed.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace maka_eval::contracts {

// Overwrites the whole buffer (size, not only the text) and empties the string.
void wipe(std::string& secret) noexcept;
// Wipes every value of NAME=VALUE pairs (contracts::variables: environments, credentials); names stay.
void wipe_values(std::vector<std::pair<std::string, std::string>>& variables) noexcept;

// Text that may be a secret (a `run` request's line, a buffer it passed through), wiped by its own
// lifetime: when destroyed, when assigned over, when moved from. No copies: a copy would be one more
// place to wipe.
class secret_text {
  public:
    secret_text() = default;
    explicit secret_text(std::string text) noexcept : text_(std::move(text)) {}
    secret_text(secret_text&& other) noexcept : text_(std::move(other.text_)) { wipe(other.text_); }
    secret_text& operator=(secret_text&& other) noexcept {
        if (this != &other) {
            wipe(text_);
            text_ = std::move(other.text_);
            wipe(other.text_);
        }
        return *this;
    }
    secret_text(const secret_text&) = delete;
    secret_text& operator=(const secret_text&) = delete;
    ~secret_text() { wipe(text_); }

    [[nodiscard]] std::string_view view() const noexcept { return text_; }
    // For who fills or trims it in place (a reader's buffer); never copy out of it.
    [[nodiscard]] std::string& text() noexcept { return text_; }
    [[nodiscard]] bool empty() const noexcept { return text_.empty(); }
    void clear() noexcept { wipe(text_); }

  private:
    std::string text_;
};

} // namespace maka_eval::contracts
