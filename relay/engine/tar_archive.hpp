// A ustar archive holding one directory and one executable, for the Engine API's archive upload
// (PUT /containers/{id}/archive), and the first entry of what its download (GET) sends back. Neither Boost
// nor OpenSSL reads or writes tar; a header is 512 bytes of fixed fields.
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

// The first entry of an archive the engine sent (GET /containers/{id}/archive?path=P holds P alone): its
// ustar type ('0' a regular file, '2' a symbolic link, '5' a directory …), its mode and, for a regular
// file, its bytes. PAX and GNU long-name records before it are passed over. nullopt when the archive is not
// one (a bad checksum, a size past the archive's end, no entry).
struct tar_entry {
    char type = '0';
    unsigned mode = 0; // permission bits
    std::string content;
};
[[nodiscard]] std::optional<tar_entry> first_tar_entry(std::string_view archive);

} // namespace maka_eval::relay
