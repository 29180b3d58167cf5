// The static helper's terminate handler: a plain abort. libstdc++'s default (__verbose_terminate_handler)
// prints the exception's demangled type, which links the whole C++ demangler (~50 KB) into a binary that
// goes into every container. The helper never lets an exception escape on purpose (main catches them and
// says what failed), so an unexpected terminate loses only a type name. Linked into the static helper only;
// this definition takes the place of libstdc++'s, whose archive member is then not needed.
#include <cstdlib>

namespace __gnu_cxx {

// libstdc++'s own name, which is what makes this replace it.
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp)
[[noreturn]] void __verbose_terminate_handler();
// NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp)
void __verbose_terminate_handler() {
    std::abort();
}

} // namespace __gnu_cxx
