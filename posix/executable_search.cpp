// Command lookup along PATH (see executable_search.hpp).
#include "posix/executable_search.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::posix {

std::vector<std::string> exec_candidates(const std::string& name, const char* path) {
    if (name.find('/') != std::string::npos) {
        return {name};
    }
    const std::string search = path != nullptr && *path != '\0' ? path : "/bin:/usr/bin";
    std::vector<std::string> out;
    std::size_t begin = 0;
    while (true) {
        const auto end = search.find(':', begin);
        std::string dir = search.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
        out.push_back((dir.empty() ? std::string(".") : dir) + "/" + name);
        if (end == std::string::npos) {
            break;
        }
        begin = end + 1;
    }
    return out;
}

std::optional<std::string> find_executable(const std::string& name, const char* path) {
    for (auto& candidate : exec_candidates(name, path)) {
        struct stat info {};
        if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0) {
            return std::move(candidate);
        }
    }
    return std::nullopt;
}

} // namespace maka_eval::posix
