// The result-frame codec and projection: the original's tests C1–C5 with their exact inputs, and the
// behaviours of the original's frame decoding that no test of the original covers.
#include "contracts/digest.hpp"
#include "contracts/limits.hpp"
#include "contracts/result_frame.hpp"
#include "support/result_printing.hpp"

#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

const std::string token = "0123456789abcdef0123456789abcdef";

std::string frame(std::string_view payload, std::string_view for_token = token) {
    return encode_frame(for_token, payload).value();
}

TEST_CASE("encode writes the producer's exact line") {
    CHECK(frame("{\"a\":1}") ==
          "MAKA-EVAL-RESULT-V1 " + token + " 7 " + sha256_hex("{\"a\":1}") + " eyJhIjoxfQ\n");
    CHECK(frame("") == "MAKA-EVAL-RESULT-V1 " + token + " 0 " + sha256_hex("") + " \n");
    // URL-safe alphabet, no padding.
    CHECK(frame("\xfb\xff").ends_with(" -_8\n"));
    CHECK(encode_frame("not-a-token", "x").error() == frame_error::invalid_token);
    CHECK(encode_frame(token, std::string(2049, 'x')).error() == frame_error::payload_too_large);
    CHECK(encode_frame(token, std::string(2048, 'x')).has_value());
}

TEST_CASE("a lone valid frame projects to its payload with no diagnostic") {
    const std::string payload = R"({"kind":"settled","status":"completed"})";
    for (const std::string& carrier : {frame(payload), frame(payload).substr(0, frame(payload).size() - 1),
                                       frame(payload).insert(frame(payload).size() - 1, "\r")}) {
        const auto p = project(carrier, token, true);
        CHECK(p.stdout_text == payload);
        CHECK(p.diagnostic == diagnostic::none());
    }
    CHECK(project(frame(""), token, true).stdout_text.empty());
    CHECK(project(frame(""), token, true).diagnostic == diagnostic::none());
}

carrier finished(std::string_view raw) {
    carrier out;
    out.feed(raw);
    out.finish();
    return out;
}

TEST_CASE("stderr is noise beside the frame as in the original merged carrier while the frame is read from "
          "stdout") {
    const std::string valid = frame("{\"ok\":1}");
    const auto quiet = finished("");
    const auto chatty = finished("warning: \xff\n"); // repaired as the original decodes it
    const std::string repaired = "warning: \xef\xbf\xbd\n";
    SUBCASE("a lone frame with a silent stderr: none, as before") {
        const auto p = project(finished(valid), token, true, &quiet);
        CHECK(p.stdout_text == "{\"ok\":1}");
        CHECK(p.diagnostic.kind == category::none);
    }
    SUBCASE("a lone frame and stderr output: unstructured-output over stderr then stdout's noise") {
        const auto p = project(finished("before\n" + valid), token, true, &chatty);
        CHECK(p.stdout_text == "{\"ok\":1}");
        CHECK(p.diagnostic.kind == category::unstructured_output);
        CHECK(p.diagnostic.bytes == repaired.size() + 7);
        CHECK(p.diagnostic.sha256 == sha256_hex(repaired + "before\n"));
        const auto only = project(finished(valid), token, true, &chatty);
        CHECK(only.diagnostic.kind == category::unstructured_output);
        CHECK(only.diagnostic.sha256 == sha256_hex(repaired));
    }
    SUBCASE("a frame on stderr is not the result, and the frame's problems are stdout's") {
        const auto on_stderr = finished(valid);
        const auto p = project(finished("no frame\n"), token, true, &on_stderr);
        CHECK(p.stdout_text.empty());
        CHECK(p.diagnostic.kind == category::result_frame_missing);
        CHECK(p.diagnostic.bytes == 9);
    }
    SUBCASE("nothing is counted when stdout is not captured") {
        CHECK(project(finished(valid), token, false, &chatty).diagnostic.kind == category::none);
    }
}

TEST_CASE("C1: merged noise cannot corrupt or escape the result frame") {
    const std::string payload = R"({"kind":"settled","status":"completed"})";
    const std::string ftoken = "frame-token";
    // The original's test token is not 32-hex; the projection itself does not care.
    const std::string line = std::string("MAKA-EVAL-RESULT-V1 frame-token ") +
                             std::to_string(payload.size()) + " " + sha256_hex(payload) +
                             " eyJraW5kIjoic2V0dGxlZCIsInN0YXR1cyI6ImNvbXBsZXRlZCJ9\n";
    const std::string carrier = "docker warning\n" + line + "credential-sentinel-must-not-persist\n";
    const auto p = project(carrier, ftoken, true);
    CHECK(p.stdout_text == payload);
    CHECK(p.diagnostic.kind == category::unstructured_output);
    CHECK(p.diagnostic.bytes == carrier.size() - line.size());
    CHECK(p.diagnostic.sha256 == sha256_hex("docker warning\ncredential-sentinel-must-not-persist\n"));
}

TEST_CASE("C2: invalid result frames fail closed with bounded evidence") {
    const std::string valid = frame("{}");
    std::string bad_digest = valid;
    bad_digest.replace(bad_digest.find(sha256_hex("{}")), 64, std::string(64, '0'));
    struct example {
        std::string carrier;
        category expected;
    };
    for (const auto& [carrier, expected] : {example{"noise only", category::result_frame_missing},
                                            example{valid + valid, category::result_frame_ambiguous},
                                            example{bad_digest, category::result_frame_invalid}}) {
        const auto p = project(carrier, token, true);
        CHECK(p.stdout_text.empty());
        CHECK(p.diagnostic == diagnostic::over(expected, carrier));
    }
}

TEST_CASE("C3: a non-UTF-8 payload is an invalid frame") {
    const std::string payload = "\xff";
    const std::string carrier = "MAKA-EVAL-RESULT-V1 " + token + " 1 " + sha256_hex(payload) + " _w\n";
    const auto p = project(carrier, token, true);
    CHECK(p.stdout_text.empty());
    CHECK(p.diagnostic.kind == category::result_frame_invalid);
}

TEST_CASE("C4: an oversized carrier is rejected before parsing") {
    const std::string carrier(65537, 'x');
    const auto p = project(carrier, token, true);
    CHECK(p.stdout_text.empty());
    CHECK(p.diagnostic == diagnostic::over(category::result_frame_oversize, carrier));
    // Exactly at the limit it is parsed (and here, missing).
    CHECK(project(std::string(65536, 'x'), token, true).diagnostic.kind == category::result_frame_missing);
    // The limit applies to the repaired text: 30,000 invalid bytes become 90,000 bytes of U+FFFD.
    CHECK(project(std::string(30000, '\xff'), token, true).diagnostic.bytes == 90000);
}

TEST_CASE("C5: subject output cannot counterfeit a scope setup failure") {
    const std::string zeros(32, '0');
    const auto p = project("subject output\nMAKA-EVAL-SCOPE-ERROR-V1 " + zeros + "\n", zeros, false);
    CHECK(p.diagnostic == diagnostic::none());
    // Only the exact, whole line counts; it wins whatever the stdout policy (§4.12).
    for (bool capture : {false, true}) {
        const auto exact = project(scope_error_line(zeros), zeros, capture);
        CHECK(exact.diagnostic ==
              diagnostic::over(category::execution_scope_unavailable, scope_error_line(zeros)));
    }
    CHECK(project(scope_error_line(zeros) + "\n", zeros, true).diagnostic.kind ==
          category::result_frame_missing);
}

TEST_CASE("captureStdout false reports nothing, however the carrier looks") {
    CHECK(project(frame("{}"), token, false).diagnostic == diagnostic::none());
    CHECK(project("noise", token, false).stdout_text.empty());
    CHECK(project(std::string(70000, 'x'), token, false).diagnostic == diagnostic::none());
}

TEST_CASE("Python splitlines separators delimit candidate lines") {
    for (const std::string sep : {"\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\xc2\x85",
                                  "\xe2\x80\xa8", "\xe2\x80\xa9"}) {
        // The separator splits the noise from the frame; the frame itself ends with its own "\n".
        const auto p = project("noise" + sep + frame("{}") + "tail", token, true);
        CAPTURE(sep);
        CHECK(p.stdout_text == "{}");
        CHECK(p.diagnostic.kind == category::unstructured_output);
    }
    // A frame ended by \v keeps the \v in its last field (only \r and \n are stripped): invalid.
    std::string line = frame("{}");
    line.back() = '\v';
    CHECK(project(line, token, true).diagnostic.kind == category::result_frame_invalid);
}

TEST_CASE("lenient corners of the original are kept deliberately") {
    const std::string payload = "hi";
    const std::string digest = sha256_hex(payload);
    auto with = [&](std::string_view length, std::string_view encoded) {
        return "MAKA-EVAL-RESULT-V1 " + token + " " + std::string(length) + " " + digest + " " +
               std::string(encoded) + "\n";
    };
    // int(): sign, underscores, leading zeros, surrounding whitespace, Unicode digits.
    for (const std::string length :
         {"2", "+2", "02", "0_2", "\t2", "\xd9\xa2", "\xef\xbc\x92", "2\xe3\x80\x80"}) {
        CAPTURE(length);
        CHECK(project(with(length, "aGk"), token, true).stdout_text == payload);
    }
    for (const std::string length : {"-2", "2_", "_2", "0x2", "2.0", "",
                                     "\x1f"
                                     "2"}) {
        CAPTURE(length);
        CHECK(project(with(length, "aGk"), token, true).diagnostic.kind == category::result_frame_invalid);
    }
    // base64: both alphabets, padded or not; strict otherwise.
    for (const std::string encoded : {"aGk", "aGk="}) {
        CAPTURE(encoded);
        CHECK(project(with("2", encoded), token, true).stdout_text == payload);
    }
    // "aGk==" is refused too: the original pads it to "aGk=====", which has data after the padding.
    for (const std::string encoded : {"aG k", "=aGk", "aG=k", "aGk==", "aGk===", "a"}) {
        CAPTURE(encoded);
        CHECK(project(with("2", encoded), token, true).diagnostic.kind == category::result_frame_invalid);
    }
    // Upper-case digests are rejected.
    std::string upper = frame(payload);
    for (auto pos = upper.find(digest), i = pos; i < pos + 64; ++i) {
        upper[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[i])));
    }
    CHECK(project(upper, token, true).diagnostic.kind == category::result_frame_invalid);
    // A frame for another token is not a candidate.
    CHECK(project(frame("{}", std::string(32, 'a')), token, true).diagnostic.kind ==
          category::result_frame_missing);
}

TEST_CASE("noise removal takes the first occurrence of the frame's text, as str.replace does") {
    const std::string line = frame("{}");
    // The frame's text also ends an earlier line that does not start with the prefix.
    const std::string carrier = "x" + line + line;
    const auto p = project(carrier, token, true);
    CHECK(p.stdout_text == "{}");
    CHECK(p.diagnostic == diagnostic::over(category::unstructured_output, "x" + line));
}

TEST_CASE("streaming and whole-buffer projection agree, chunked anywhere") {
    const std::string text = "caf\xc3\xa9 \xe2\x82 bad\xff\n" + frame("{\"ok\":true}") + "tail \xf0\x9f\x98";
    const auto whole = project(text, token, true);
    for (std::size_t chunk = 1; chunk <= 7; ++chunk) {
        carrier stream;
        for (std::size_t i = 0; i < text.size(); i += chunk) {
            stream.feed(std::string_view(text).substr(i, chunk));
        }
        stream.finish();
        const auto p = project(stream, token, true);
        CHECK(p.stdout_text == whole.stdout_text);
        CHECK(p.diagnostic == whole.diagnostic);
    }
}

TEST_CASE("an oversize stream keeps bounded memory and hashes everything") {
    carrier stream;
    const std::string block(1 << 20, 'y');
    sha256 expected;
    for (int i = 0; i < 8; ++i) {
        stream.feed(block);
        expected.update(block);
    }
    stream.finish();
    CHECK(stream.text().size() == carrier::carrier_limit + 1);
    const auto p = project(stream, token, true);
    CHECK(p.diagnostic == diagnostic::evidence(category::result_frame_oversize, 8U << 20U, expected.hex()));
}

} // namespace

TEST_CASE("a carrier following its stream's digest hashes what a carrier of its own does, however the stream "
          "is cut and whatever it holds") {
    // Valid ASCII and multi-byte text, a character cut between writes, invalid bytes, a truncated tail.
    const std::vector<std::string> streams = {
        "plain text\n",
        "na\xC3\xAFve \xE2\x82\xAC \xF0\x9F\x98\x80 done",
        std::string("bad \xC3\x28 then \xED\xA0\x80 surrogate \xFF end"),
        "ends mid-character \xE2\x82",
        std::string(100, 'a') + "\xF0\x9F\x98\x80" + std::string(100, 'b'),
    };
    for (const auto& stream : streams) {
        for (std::size_t cut = 1; cut <= stream.size(); ++cut) {
            carrier alone;
            carrier following;
            maka_eval::contracts::sha256 raw;
            following.follow(raw);
            for (std::size_t at = 0; at < stream.size(); at += cut) {
                const std::string_view chunk = std::string_view(stream).substr(at, cut);
                alone.feed(chunk);
                following.feed(chunk);
                raw.update(chunk); // the owner feeds its digest after the carrier
            }
            alone.finish();
            following.finish();
            CAPTURE(stream);
            CAPTURE(cut);
            CHECK(following.size() == alone.size());
            CHECK(following.text() == alone.text());
            CHECK(following.sha256_hex() == alone.sha256_hex());
            CHECK(following.sha256_hex_after("more") == alone.sha256_hex_after("more"));
            CHECK(alone.sha256_hex() ==
                  maka_eval::contracts::sha256_hex(maka_eval::contracts::repair_utf8(stream)));
        }
    }
}
