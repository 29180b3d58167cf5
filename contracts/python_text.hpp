// The three Python built-ins whose exact behaviour the result-frame projection depends on.
//
// The original decodes a frame with `str.splitlines(keepends=True)`, `int(text)` and
// `base64.b64decode(text, altchars=b"-_", validate=True)`. Each accepts more than a strict reading of the
// frame format would (its lenient corners); we accept exactly what CPython 3.11
// accepts, so an orchestrator sees the same verdict from either relay. All functions take valid UTF-8.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace maka_eval::contracts::python {

// str.splitlines(keepends=True): splits after \n, \r\n, \r, \v, \f, \x1c, \x1d, \x1e, U+0085, U+2028 and
// U+2029. The views point into `text`; a trailing piece without a separator is the last line.
[[nodiscard]] std::vector<std::string_view> splitlines(std::string_view text);

// int(text) in base 10: surrounding whitespace (ASCII and Unicode), one sign, single underscores between
// digits, any Unicode decimal digit, at most 4300 digits (CPython's default limit). Values beyond the
// int64 range saturate, which is enough for every bound this project checks.
[[nodiscard]] std::optional<std::int64_t> parse_int(std::string_view text);

// base64.b64decode(text, altchars=b"-_", validate=True) under CPython 3.11's strict mode. Decoding itself is
// done by OpenSSL; this function owns the acceptance rules (alphabet, padding placement).
[[nodiscard]] std::optional<std::string> b64decode_strict(std::string_view text);

// base64.urlsafe_b64encode(bytes) without padding, the producer's frame alphabet.
[[nodiscard]] std::string b64encode_url_unpadded(std::string_view bytes);

// base64.b64encode(bytes): the standard alphabet with padding.
[[nodiscard]] std::string b64encode(std::string_view bytes);
// The inverse of b64encode and nothing else: whole quads of the standard alphabet, padding only at the end.
// Faster than b64decode_strict, for our own binary data (the session's `output`), not for frames.
[[nodiscard]] std::optional<std::string> b64decode_standard(std::string_view text);

} // namespace maka_eval::contracts::python
