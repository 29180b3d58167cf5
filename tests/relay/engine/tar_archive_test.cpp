// The one-file archives the relay uploads, and the reading of the first entry of what the engine sends back
// (the installed helper's check): what we write reads back, and what a hostile or broken archive holds is
// never taken for a file.
#include "relay/engine/tar_archive.hpp"

#include <array>
#include <cstdio>
#include <string>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;

// A one-entry archive as the engine's GET sends it: `name` of `type` with `content`.
std::string single(char type, std::string_view content, std::string_view link = {}) {
    // tar_one_file writes a directory first; what follows it is the entry we want at the front.
    const std::string two = tar_one_file("d", "name", content, 0755, link.empty() ? "" : "alias");
    std::string entry = two.substr(512);
    if (type == '2') {
        const std::size_t padded = (content.size() + 511) / 512 * 512;
        entry = two.substr(512 + 512 + padded); // the alias symlink
    }
    return entry;
}

TEST_CASE("a regular file's bytes read back whole, past a PAX record before it") {
    std::string content(70000, 'x');
    content[12345] = '\0';
    const auto archive = single('0', content);
    const auto entry = first_tar_entry(archive);
    REQUIRE(entry);
    CHECK(entry->type == '0');
    CHECK(entry->mode == 0755);
    CHECK(entry->content == content);
    // A PAX extended header (as Go's archive/tar may write) first: passed over.
    const std::string pax_body = "30 mtime=1700000000.123456789\n";
    std::string pax = tar_one_file("d", "PaxHeader", pax_body, 0644).substr(512, 1024);
    pax[156] = 'x';
    // Its checksum was computed for type '0': 'x' - '0' more now, six octal digits.
    const auto sum = std::stoul(pax.substr(148, 7), nullptr, 8) + ('x' - '0');
    std::array<char, 8> field{};
    (void)std::snprintf(field.data(), field.size(), "%06lo", sum);
    pax.replace(148, 6, field.data(), 6);
    const auto behind_pax = first_tar_entry(pax + archive);
    REQUIRE(behind_pax);
    CHECK(behind_pax->content == content);
}

TEST_CASE("a symbolic link or a directory is said as such, with no content") {
    const auto link = first_tar_entry(single('2', "abc", "alias"));
    REQUIRE(link);
    CHECK(link->type == '2');
    CHECK(link->content.empty());
    const auto dir = first_tar_entry(tar_one_file("d", "name", "abc", 0755));
    REQUIRE(dir);
    CHECK(dir->type == '5');
}

TEST_CASE("what is not an archive is never taken for a file") {
    CHECK_FALSE(first_tar_entry(""));
    CHECK_FALSE(first_tar_entry("not a tar"));
    CHECK_FALSE(first_tar_entry(std::string(1024, '\0'))); // the end blocks alone: no entry
    auto archive = single('0', "genuine");
    auto bad_sum = archive;
    bad_sum[0] ^= 1; // the name changed, the checksum not
    CHECK_FALSE(first_tar_entry(bad_sum));
    // A size past the end of what arrived: a cut download, not a shorter file.
    CHECK_FALSE(first_tar_entry(archive.substr(0, 512 + 3)));
    const auto whole = first_tar_entry(archive.substr(0, 512 + 7));
    REQUIRE(whole);
    CHECK(whole->content == "genuine");
}

} // namespace
