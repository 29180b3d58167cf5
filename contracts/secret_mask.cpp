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
}

std::uint32_t secret_masker::child(std::uint32_t at, unsigned char byte) const {
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
    const std::size_t base = pending_.size();
    pending_.append(chunk);
    mask_.resize(pending_.size(), false);
    for (std::size_t i = 0; i < chunk.size(); ++i) {
        state_ = step(state_, static_cast<unsigned char>(chunk[i]));
        if (const std::uint32_t length = nodes_[state_].longest; length > 0) {
            // An occurrence ends here: mark what is not marked yet (each byte once, overlaps as a union).
            const std::uint64_t end = position_ + base + i + 1;
            for (std::uint64_t at = std::max(end - length, masked_end_); at < end; ++at) {
                mask_[static_cast<std::size_t>(at - position_)] = true;
            }
            masked_end_ = end;
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
    const std::size_t count = pending_.size() - keep;
    for (std::size_t i = 0; i < count; ++i) {
        if (!mask_[i]) {
            out.push_back(pending_[i]);
            last_out_masked_ = false;
        } else if (!last_out_masked_) {
            out.append(replacement);
            last_out_masked_ = true;
            ++masked_;
        }
    }
    pending_.erase(0, count);
    mask_.erase(mask_.begin(), mask_.begin() + static_cast<std::ptrdiff_t>(count));
    position_ += count;
}

} // namespace maka_eval::contracts
