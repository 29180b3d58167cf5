// The streaming secret masker against a whole-string reference, over every way a stream can be split.
#include "contracts/python_text.hpp"
#include "contracts/secret_mask.hpp"
#include "support/mask_reference.hpp"

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace {

using maka_eval::contracts::secret_forms;
using maka_eval::contracts::secret_masker;

std::string reference(const std::string& text, const std::vector<std::string_view>& secrets) {
    return maka_eval::testing::reference_mask(text, secrets);
}

std::string masked(const std::vector<std::string_view>& secrets, const std::vector<std::string>& chunks,
                   std::uint64_t* count = nullptr) {
    secret_masker masker(secrets);
    std::string out;
    for (const auto& chunk : chunks) {
        masker.feed(chunk, out);
    }
    masker.finish(out);
    if (count != nullptr) {
        *count = masker.masked();
    }
    return out;
}

TEST_CASE("a value printed whole, split across writes, or byte by byte is masked the same") {
    const std::vector<std::string_view> secrets{"sk-live-0123456789"};
    const std::string text = "key=sk-live-0123456789\nagain sk-live-0123456789.";
    std::uint64_t count = 0;
    CHECK(masked(secrets, {text}, &count) == "key=***\nagain ***.");
    CHECK(count == 2);
    CHECK(masked(secrets, {"key=sk-live-01234", "56789\nagain sk-live-0123456789."}) ==
          "key=***\nagain ***.");
    std::vector<std::string> bytes;
    for (const char ch : text) {
        bytes.emplace_back(1, ch);
    }
    CHECK(masked(secrets, bytes) == "key=***\nagain ***.");
}

TEST_CASE("its base64 inside a longer encoding and its URL encoding are masked too") {
    const std::string_view secret = "s3cr3t/value+1";
    // An HTTP Basic header: base64 of "user:" followed by the value.
    const std::string basic =
        "Authorization: Basic " + maka_eval::contracts::python::b64encode("user:" + std::string(secret));
    const auto out = masked({secret}, {basic});
    CHECK(out.find("***") != std::string::npos);
    CHECK(out.size() < basic.size() - 8);
    CHECK(masked({secret}, {"GET /?token=s3cr3t%2Fvalue%2B1 HTTP/1.1"}) == "GET /?token=*** HTTP/1.1");
    CHECK(masked({secret}, {"token=s3cr3t%2fvalue%2b1"}) == "token=***");
}

TEST_CASE("the URL forms encode every byte as RFC 3986 says, in both cases, wherever it stands") {
    // Written out here byte by byte, independently of the masker's table and its branch-free writes.
    auto expected = [](std::string_view value, const char* format) {
        std::string out;
        for (const char ch : value) {
            const auto c = static_cast<unsigned char>(ch);
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                c == '.' || c == '_' || c == '~') {
                out += ch;
            } else {
                char digits[4];
                (void)std::snprintf(digits, sizeof digits, format, static_cast<unsigned>(c));
                out += digits;
            }
        }
        return out;
    };
    std::string every;
    for (unsigned c = 0; c < 256; ++c) {
        every += static_cast<char>(c);
    }
    // Every byte; and values ending in a kept byte and in an encoded one (the last write is the tightest).
    for (const std::string& value : {every, std::string("s3cr3t/value+1a"), std::string("s3cr3t/value+1/"),
                                     std::string("/"), std::string("~~~~~~~~/")}) {
        const auto forms = secret_forms(value);
        REQUIRE(forms.size() >= 2);
        CHECK(forms[forms.size() - 2] == expected(value, "%%%02X"));
        CHECK(forms[forms.size() - 1] == expected(value, "%%%02x"));
    }
}

TEST_CASE("short values are not masked and are counted, overlapping values mask their union") {
    secret_masker masker({"abc", "", "abcdef", "defghij"});
    CHECK(masker.skipped() == 1);
    std::string out;
    masker.feed("xxabcdefghijyy abc", out);
    masker.finish(out);
    CHECK(out == "xx***yy abc");
    CHECK(masker.masked() == 1);
    // A longer value found after a shorter one inside it, beginning before it: the whole longer one goes.
    secret_masker nested({"cdef", "abcdefghij"});
    out.clear();
    nested.feed("xxabcdefghijyy", out);
    nested.finish(out);
    CHECK(out == "xx***yy");
}

TEST_CASE("nothing to mask is a pass-through, and what is held back is bounded by the longest form") {
    secret_masker none({});
    std::string out;
    none.feed("plain", out);
    CHECK(out == "plain");
    secret_masker masker({"0123456789abcdef"});
    out.clear();
    masker.feed(std::string(100000, 'x') + "0123456789abcde", out);
    CHECK(out.size() >= 100000); // only the possible start of an occurrence waits
    masker.finish(out);
    CHECK(out == std::string(100000, 'x') + "0123456789abcde");
}

TEST_CASE("random texts, secrets and splits agree with the whole-string reference") {
    std::mt19937 random(20261203);
    const std::string alphabet = "ab/+=%2Fc";
    auto text_of = [&](std::size_t n) {
        std::string s;
        for (std::size_t i = 0; i < n; ++i) {
            s.push_back(alphabet[random() % alphabet.size()]);
        }
        return s;
    };
    for (int round = 0; round < 4000; ++round) {
        // Short values (some below the minimum) and long ones, so that the skip over windows is long too.
        const std::size_t longest = round % 2 == 0 ? 8 : 40;
        std::vector<std::string> owned;
        for (int k = 0; k < 1 + static_cast<int>(random() % 3); ++k) {
            owned.push_back(text_of(1 + random() % longest));
        }
        const std::vector<std::string_view> secrets(owned.begin(), owned.end());
        std::string text = text_of(random() % 400);
        // Plant the secrets and their forms so that occurrences are common.
        for (const auto& secret : owned) {
            text.insert(random() % (text.size() + 1), secret);
            const auto forms = secret_forms(secret);
            text.insert(random() % (text.size() + 1), forms[random() % forms.size()]);
        }
        std::vector<std::string> chunks;
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t n = 1 + random() % 17;
            chunks.push_back(text.substr(at, n));
            at += n;
        }
        CAPTURE(text);
        CHECK(masked(secrets, chunks) == reference(text, secrets));
    }
}

} // namespace

TEST_CASE("200 credentials of 4 KiB: the masker holds their forms once and a fixed index, and masks each") {
    std::mt19937 random(20261206);
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_.~:@";
    std::vector<std::string> owned;
    for (int i = 0; i < 200; ++i) {
        std::string value;
        for (int k = 0; k < 4096; ++k) {
            value.push_back(alphabet[random() % alphabet.size()]);
        }
        owned.push_back(std::move(value));
    }
    const std::vector<std::string_view> secrets(owned.begin(), owned.end());
    std::size_t form_bytes = 0;
    std::size_t form_count = 0;
    for (const auto& secret : owned) {
        form_bytes += secret.size();
        ++form_count;
        for (const auto& form : secret_forms(secret)) {
            form_bytes += form.size();
            ++form_count;
        }
    }
    secret_masker masker(secrets);
    CHECK(masker.forms() == form_count); // value, base64 at three alignments, percent-encoding in two cases
    // The bound docs/security.md states: the forms' bytes, 16 per form, 64 KiB, and the reservation's slack.
    CHECK(masker.table_bytes() <= form_bytes + 16 * form_count + (64U << 10U) + form_bytes / 8);
    // Every form of some of them, among other text and split at random, comes out masked.
    std::string text = "start ";
    for (const std::size_t i : {0U, 57U, 123U, 199U}) {
        text += owned[i] + " and " + secret_forms(owned[i])[i % 5] + "\n";
    }
    std::vector<std::string> chunks;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t n = 1 + random() % 5000;
        chunks.push_back(text.substr(at, n));
        at += n;
    }
    CHECK(masked(secrets, chunks) == "start *** and ***\n*** and ***\n*** and ***\n*** and ***\n");
}
