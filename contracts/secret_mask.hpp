// Credential values masked out of a byte stream as it passes, in bounded memory.
//
// What the subject prints goes into artifacts that get uploaded and published, and onto a `--follow`
// screen: a credential it echoes must not. Every occurrence of a secret value — and of the forms it commonly
// takes in output, its base64 (at each of the three alignments inside a longer encoding, as in an HTTP Basic
// header) and its URL encoding — is replaced by `***`, across any split of the stream into chunks.
//
// The rules, for users (README, security):
// - values shorter than `min_secret_bytes` are not masked (masking "1" or "yes" would garble everything and
//   protect nothing); `skipped()` counts them, and the relay logs how many;
// - where occurrences of one or more secrets overlap or touch, the union of their bytes becomes one `***`;
// - at most the longest form less one byte is held back at any time (only bytes that could still begin an
//   occurrence); `finish` releases it at the end;
// - `masked()` counts the `***` written (never the values).
// Memory is the forms' own bytes plus a fixed index (`table_bytes`), whatever their number: the forms are
// kept once, sorted, and found by their first bytes (a window of up to 8) through a hash table, with
// Wu–Manber's shift over the windows passing most of a stream without a look-up. Pure, so a fuzz target
// compares it with a whole-string reference over random splits (tests/fuzz/fuzz_secret_mask.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace maka_eval::contracts {

class secret_masker {
  public:
    static constexpr std::size_t min_secret_bytes = 4;
    static constexpr std::string_view replacement = "***";

    explicit secret_masker(const std::vector<std::string_view>& secrets);

    // Appends to `out` the masked bytes of `chunk` that can no longer be part of an occurrence.
    void feed(std::string_view chunk, std::string& out);
    // Appends what was held back: the stream ended.
    void finish(std::string& out);

    [[nodiscard]] bool empty() const { return !patterns_; } // nothing to mask: a pass-through
    [[nodiscard]] std::uint64_t masked() const { return masked_; }
    [[nodiscard]] std::size_t skipped() const { return skipped_; }
    [[nodiscard]] std::size_t forms() const;
    // The bytes the forms and their index hold (shared by every copy of this masker): the forms' own
    // bytes, 16 per form and 64 KiB (docs/security.md).
    [[nodiscard]] std::size_t table_bytes() const;

  private:
    struct patterns;
    // Resolves the positions of pending_ from scan_ on: each either starts no form, or starts the longest
    // form that ends within what has arrived (a masked stretch). Stops at the first position that could still
    // start one (a form matches up to the end of what arrived); `final`: nothing more will arrive.
    void resolve(bool final);
    // Emits the pending bytes before scan_, one `***` per masked run.
    void emit(std::string& out);

    std::shared_ptr<const patterns> patterns_; // immutable: copies of the masker share it
    std::size_t skipped_ = 0;
    std::string pending_;        // bytes not yet emitted: the resolved ones before scan_, then the rest
    std::uint64_t position_ = 0; // stream offset of pending_[0]
    std::uint64_t scan_ = 0;     // stream offset of the first position not resolved
    // The masked stretches of what is pending, [begin, end) in stream offsets: sorted, apart from each
    // other (touching or overlapping ones are merged as they are found).
    std::vector<std::pair<std::uint64_t, std::uint64_t>> masked_runs_;
    bool last_out_masked_ = false; // the last byte emitted was masked (a run continues across emits)
    std::uint64_t masked_ = 0;
};

// The forms of `value` that are masked besides itself: base64 at three alignments (only the characters the
// value alone determines), percent-encoding (upper and lower case hex) where it differs.
[[nodiscard]] std::vector<std::string> secret_forms(std::string_view value);

} // namespace maka_eval::contracts
