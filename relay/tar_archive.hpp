// A ustar archive holding one directory and one executable, for the Engine API's archive upload
// (PUT /containers/{id}/archive). Neither Boost nor OpenSSL writes tar; a header is 512 bytes of fixed
// fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace maka_eval::relay {

// `directory/` (0755), `directory/name` (`mode`, owned by root) and, when `alias` is given, a symlink
// `directory/alias` → `name`; then the end-of-archive blocks.
[[nodiscard]] std::string tar_one_file(std::string_view directory, std::string_view name,
                                       std::string_view content, unsigned mode, std::string_view alias = {});

// The same with the file at `path` as content, read straight into the archive (one copy of a large binary
// in memory, not two); nullopt when it cannot be read.
[[nodiscard]] std::optional<std::string> tar_one_file_from(std::string_view directory, std::string_view name,
                                                           const std::string& path, unsigned mode,
                                                           std::string_view alias = {});

} // namespace maka_eval::relay
