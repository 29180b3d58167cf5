// The streaming secret masker (see secret_mask.hpp).
#include "contracts/secret_mask.hpp"

#include "contracts/python_text.hpp"

#include <algorithm>
#include <deque>

namespace maka_eval::contracts {
namespace {

bool unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

std::string percent_encoded(std::string_view value, const char* digits) {
    std::string out;
    for (const char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        if (unreserved(c)) {
            out.push_back(ch);
        } else {
            out += {'%', digits[c >> 4U], digits[c & 0xFU]};
        }
    }
    return out;
}

} // namespace

std::vector<std::string> secret_forms(std::string_view value) {
    std::vector<std::string> out;
    // Base64 of the value after k other bytes: the characters whose six bits all come from the value.
    for (std::size_t k = 0; k < 3; ++k) {
        const std::string encoded = python::b64encode(std::string(k, '\0') + std::string(value));
        const std::size_t first = (8 * k + 5) / 6;
        const std::size_t last = 8 * (k + value.size()) / 6; // one past
        if (last > first) {
            out.push_back(encoded.substr(first, last - first));
        }
    }
    for (const char* digits : {"0123456789ABCDEF", "0123456789abcdef"}) {
        if (auto encoded = percent_encoded(value, digits); encoded != value) {
            out.push_back(std::move(encoded));
        }
    }
    return out;
}

secret_masker::secret_masker(const std::vector<std::string_view>& secrets) : nodes_(1) {
    std::vector<std::string> forms;
    for (const auto secret : secrets) {
        if (secret.size() < min_secret_bytes) {
            skipped_ += secret.empty() ? 0U : 1U;
            continue;
        }
        forms.emplace_back(secret);
        for (auto& form : secret_forms(secret)) {
            if (form.size() >= min_secret_bytes) {
                forms.push_back(std::move(form));
            }
        }
    }
    std::sort(forms.begin(), forms.end());
    forms.erase(std::unique(forms.begin(), forms.end()), forms.end());
    for (const auto& form : forms) {
        add(form);
    }
    forms_ = forms.size();
    link();
    if (forms.empty()) {
        return;
    }
    window_ = 255;
    for (const auto& form : forms) {
        window_ = std::min(window_, form.size());
    }
    shift_.assign(std::size_t{1} << 16U, static_cast<std::uint8_t>(window_ - 1));
    for (const auto& form : forms) {
        for (std::size_t q = 0; q + 1 < window_; ++q) {
            const unsigned pair = (unsigned{static_cast<unsigned char>(form[q])} << 8U) |
                                  static_cast<unsigned char>(form[q + 1]);
            shift_[pair] = std::min(shift_[pair], static_cast<std::uint8_t>(window_ - 2 - q));
        }
    }
}

std::uint32_t secret_masker::child(std::uint32_t at, unsigned char byte) const {
    if (at == 0) {
        return root_next_[byte];
    }
    for (const auto& [label, to] : nodes_[at].next) {
        if (label == byte) {
            return to;
        }
    }
    return 0;
}

void secret_masker::add(std::string_view form) {
    std::uint32_t at = 0;
    for (const char ch : form) {
        const auto byte = static_cast<unsigned char>(ch);
        std::uint32_t to = child(at, byte);
        if (to == 0) {
            to = static_cast<std::uint32_t>(nodes_.size());
            nodes_.push_back(node{{}, 0, nodes_[at].depth + 1, 0});
            nodes_[at].next.emplace_back(byte, to);
            if (at == 0) {
                root_next_[byte] = to;
            }
        }
        at = to;
    }
    nodes_[at].longest = nodes_[at].depth;
}

void secret_masker::link() {
    // Breadth first: a node's suffix link points to a shallower node, already linked.
    std::deque<std::uint32_t> queue;
    for (const auto& [label, to] : nodes_[0].next) {
        queue.push_back(to);
    }
    while (!queue.empty()) {
        const std::uint32_t at = queue.front();
        queue.pop_front();
        if (nodes_[at].longest == 0) {
            nodes_[at].longest = nodes_[nodes_[at].fail].longest;
        }
        for (const auto& [label, to] : nodes_[at].next) {
            nodes_[to].fail = at == 0 ? 0 : step(nodes_[at].fail, label);
            queue.push_back(to);
        }
    }
}

std::uint32_t secret_masker::step(std::uint32_t at, unsigned char byte) const {
    while (true) {
        if (const std::uint32_t to = child(at, byte); to != 0) {
            return to;
        }
        if (at == 0) {
            return 0;
        }
        at = nodes_[at].fail;
    }
}

void secret_masker::feed(std::string_view chunk, std::string& out) {
    if (empty()) {
        out.append(chunk);
        return;
    }
    const std::uint64_t base = position_ + pending_.size();
    pending_.append(chunk);
    const auto* bytes = reinterpret_cast<const unsigned char*>(chunk.data());
    for (std::size_t i = 0; i < chunk.size(); ++i) {
        if (state_ == 0) {
            while (i + window_ <= chunk.size()) {
                const unsigned pair = (unsigned{bytes[i + window_ - 2]} << 8U) | bytes[i + window_ - 1];
                if (shift_[pair] == 0) {
                    break; // an occurrence may start at i: the automaton reads on from here
                }
                i += shift_[pair];
            }
            if (i >= chunk.size()) {
                break;
            }
        }
        state_ = step(state_, bytes[i]);
        if (const std::uint32_t length = nodes_[state_].longest; length > 0) {
            // An occurrence ends here: what it covers joins the masked stretches (as a union).
            // Occurrences end in order, but a longer one may begin before stretches already found: every
            // stretch it overlaps or touches is folded into it.
            const std::uint64_t end = base + i + 1;
            std::uint64_t begin = end - length;
            while (!masked_runs_.empty() && masked_runs_.back().second >= begin) {
                begin = std::min(begin, masked_runs_.back().first);
                masked_runs_.pop_back();
            }
            masked_runs_.emplace_back(begin, end);
        }
    }
    // What a later occurrence could still include: the bytes the automaton is inside of.
    emit(nodes_[state_].depth, out);
}

void secret_masker::finish(std::string& out) {
    emit(0, out);
    state_ = 0;
}

void secret_masker::emit(std::size_t keep, std::string& out) {
    if (pending_.size() <= keep) {
        return;
    }
    const std::uint64_t until = position_ + (pending_.size() - keep);
    std::uint64_t at = position_;
    while (at < until) {
        if (masked_runs_.empty() || masked_runs_.front().first >= until) {
            out.append(pending_, static_cast<std::size_t>(at - position_),
                       static_cast<std::size_t>(until - at));
            last_out_masked_ = false;
            break;
        }
        auto& run = masked_runs_.front();
        if (run.first > at) {
            out.append(pending_, static_cast<std::size_t>(at - position_),
                       static_cast<std::size_t>(run.first - at));
            last_out_masked_ = false;
        }
        // A stretch that continues one already shown (emitted before, or touching it) adds no second ***.
        if (!last_out_masked_) {
            out.append(replacement);
            ++masked_;
        }
        last_out_masked_ = true;
        at = std::min(run.second, until);
        if (run.second <= until) {
            masked_runs_.erase(masked_runs_.begin());
        } else {
            run.first = until; // the rest of it waits with the pending bytes
        }
    }
    pending_.erase(0, static_cast<std::size_t>(until - position_));
    position_ = until;
}

} // namespace maka_eval::contracts
