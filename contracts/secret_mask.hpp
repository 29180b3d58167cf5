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
// - at most the longest form less one byte is held back at any time; `finish` releases it at the end;
// - `masked()` counts the `***` written (never the values).
// Pure and allocation-bounded, so a fuzz target covers it (tests/fuzz/fuzz_secret_mask.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
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

    [[nodiscard]] bool empty() const { return nodes_.size() == 1; } // nothing to mask: a pass-through
    [[nodiscard]] std::uint64_t masked() const { return masked_; }
    [[nodiscard]] std::size_t skipped() const { return skipped_; }
    [[nodiscard]] std::size_t forms() const { return forms_; }

  private:
    // An Aho–Corasick automaton over the forms. `longest` is the longest form that ends at this node (the
    // node's own, or one reached by suffix links): every shorter one ending there lies inside it.
    struct node {
        std::vector<std::pair<unsigned char, std::uint32_t>> next;
        std::uint32_t fail = 0;
        std::uint32_t depth = 0;
        std::uint32_t longest = 0;
    };
    void add(std::string_view form);
    void link();
    [[nodiscard]] std::uint32_t child(std::uint32_t at, unsigned char byte) const;
    [[nodiscard]] std::uint32_t step(std::uint32_t at, unsigned char byte) const;
    // Emits pending bytes up to `keep` from the end, one `***` per masked run.
    void emit(std::size_t keep, std::string& out);

    std::vector<node> nodes_;
    std::uint32_t root_next_[256] =
        {}; // the root's transitions, dense: most bytes of a stream are read there
    // Wu–Manber's shift table over the forms' first `window_` bytes: from the root, when the last two bytes
    // of the window starting at i have shift s > 0, no occurrence starts at i … i+s-1, so the automaton
    // passes over them without stepping (most of a stream, a table lookup every few bytes).
    std::vector<std::uint8_t> shift_;
    std::size_t window_ = 0; // the shortest form's length, at most 255
    std::size_t forms_ = 0;
    std::size_t skipped_ = 0;
    std::uint32_t state_ = 0;
    std::string pending_;        // bytes that may still be part of an occurrence
    std::uint64_t position_ = 0; // stream offset of pending_[0]
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
