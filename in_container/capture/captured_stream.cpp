// One captured output stream: count, hash, mask, keep up to the limit (see captured_stream.hpp).
#include "in_container/capture/captured_stream.hpp"

#include "contracts/utf8.hpp"
#include "in_container/base/io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {

captured_stream::~captured_stream() {
    close_pipe();
    if (artifact >= 0) {
        ::close(artifact);
    }
}

void captured_stream::close_pipe() {
    if (fd >= 0) {
        ::close(fd);
        fd = -1;
    }
}

void captured_stream::part_file_digest() {
    if (file_follows_) {
        file_digest = digest;
        file_follows_ = false;
    }
}

bool captured_stream::take(std::string_view chunk, std::string_view& shown) {
    bytes += chunk.size();
    if (masker || chunk.size() > limit - written) {
        part_file_digest();
    }
    // The stream's digest takes the chunk after it is kept: a write the disk refuses part-way parts the
    // file's digest from the state before it.
    const bool kept = shown_and_kept(chunk, shown);
    digest.update(chunk);
    return kept;
}

bool captured_stream::pass(std::string_view chunk, std::string_view& shown) {
    part_file_digest(); // the drainer: the stream's digest is no longer fed
    return shown_and_kept(chunk, shown);
}

bool captured_stream::shown_and_kept(std::string_view chunk, std::string_view& shown) {
    if (!masker) {
        shown = chunk;
        return keep(chunk);
    }
    masked.clear();
    masker->feed(chunk, masked);
    shown = masked;
    return keep(masked);
}

bool captured_stream::finish(std::string_view& shown) {
    shown = {};
    if (!masker) {
        return true;
    }
    masked.clear();
    masker->finish(masked);
    shown = masked;
    return keep(masked);
}

bool captured_stream::keep(std::string_view chunk) {
    if (artifact_failed) {
        return true;
    }
    const auto room = static_cast<std::size_t>(std::min<std::uint64_t>(limit - written, chunk.size()));
    if (room > 0 && !write_all(artifact, chunk.substr(0, room))) {
        part_file_digest();
        artifact_failed = true;
        write_error = errno;
        // Part of it may be on disk (a full disk takes what fits): the receipt describes the file as it is.
        struct stat info {};
        if (::fstat(artifact, &info) == 0 && static_cast<std::uint64_t>(info.st_size) > written &&
            static_cast<std::uint64_t>(info.st_size) - written <= room) {
            const auto partial = static_cast<std::size_t>(static_cast<std::uint64_t>(info.st_size) - written);
            file_digest.update(chunk.substr(0, partial));
            written += partial;
        }
        return false;
    }
    if (!file_follows_) {
        file_digest.update(chunk.substr(0, room));
    }
    written += room;
    // The end of what was kept, for the report (bounded: trimmed when it has grown to twice the tail).
    tail.append(chunk.substr(room > contracts::stderr_tail_bytes ? room - contracts::stderr_tail_bytes : 0,
                             std::min(room, contracts::stderr_tail_bytes)));
    if (tail.size() > 2 * contracts::stderr_tail_bytes) {
        tail.erase(0, tail.size() - contracts::stderr_tail_bytes);
    }
    if (room < chunk.size() && !cut) {
        cut = true;
        log_line(path + " reached its limit of " + std::to_string(limit) +
                 " bytes: the rest is counted and hashed, not kept");
    }
    return true;
}

contracts::artifact_summary captured_stream::summary() const {
    contracts::artifact_summary out{path, bytes, digest.hex()};
    out.written = written;
    out.truncated = cut; // some byte was dropped at the limit
    out.masked = masker ? masker->masked() : 0;
    return out;
}

bool captured_stream::sync() {
    if (artifact >= 0 && !artifact_failed && ::fdatasync(artifact) != 0) {
        artifact_failed = true;
        write_error = errno;
        return false;
    }
    return true;
}

contracts::artifact_receipt captured_stream::receipt_entry(bool drained) const {
    contracts::artifact_receipt entry;
    entry.name = name;
    entry.bytes = written;
    entry.sha256 = file_follows_ ? digest.hex() : file_digest.hex();
    entry.masked = masker ? masker->masked() : 0;
    entry.complete = !cut && !artifact_failed && !drained;
    entry.incomplete = artifact_failed
                           ? std::string("the disk refused a write: ") + std::strerror(write_error)
                       : cut     ? "cut at the artifact limit of " + std::to_string(limit) + " bytes"
                       : drained ? std::string("still written by a process the subject left running")
                                 : std::string();
    return entry;
}

std::string captured_stream::tail_text() const {
    const std::string_view kept = tail;
    return contracts::repair_utf8(kept.substr(
        kept.size() > contracts::stderr_tail_bytes ? kept.size() - contracts::stderr_tail_bytes : 0));
}

} // namespace maka_eval::in_container
