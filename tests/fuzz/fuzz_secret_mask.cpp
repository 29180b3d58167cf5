// Fuzz the streaming secret masker: the input is split into secrets, a text and chunk sizes; whatever the
// split, the masked stream must equal masking the whole text at once, that must equal a whole-string
// reference (every occurrence of every form marked, each marked run one `***`), and contain no secret (of
// masked length) that the text's masking could have removed.
#include "contracts/secret_mask.hpp"
#include "support/mask_reference.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using maka_eval::contracts::secret_masker;

std::string mask_in_chunks(const std::vector<std::string_view>& secrets, std::string_view text,
                           std::string_view sizes) {
    secret_masker masker(secrets);
    std::string out;
    std::size_t at = 0;
    std::size_t next_size = 0;
    while (at < text.size()) {
        const std::size_t n =
            sizes.empty() ? text.size() : 1 + static_cast<unsigned char>(sizes[next_size++ % sizes.size()]);
        masker.feed(text.substr(at, n), out);
        at += n;
    }
    masker.finish(out);
    return out;
}

} // namespace

// Input: up to three secrets, a text and chunk sizes, separated by 0xFF bytes.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string_view> parts;
    std::size_t from = 0;
    for (std::size_t at = input.find('\xff'); at != std::string_view::npos && parts.size() < 4;
         at = input.find('\xff', from)) {
        parts.push_back(input.substr(from, at - from));
        from = at + 1;
    }
    parts.push_back(input.substr(from));
    if (parts.size() < 2) {
        return 0;
    }
    const std::string_view sizes = parts.size() >= 3 ? parts.back() : std::string_view();
    const std::string_view text = parts.size() >= 3 ? parts[parts.size() - 2] : parts.back();
    const std::vector<std::string_view> secrets(
        parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(parts.size() >= 3 ? parts.size() - 2 : 1));
    const std::string whole = mask_in_chunks(secrets, text, {});
    if (whole != maka_eval::testing::reference_mask(text, secrets) ||
        mask_in_chunks(secrets, text, sizes) != whole) {
        std::abort();
    }
    for (const auto secret : secrets) {
        if (secret.size() >= secret_masker::min_secret_bytes && secret.find('*') == std::string_view::npos &&
            whole.find(secret) != std::string::npos) {
            std::abort();
        }
    }
    return 0;
}
