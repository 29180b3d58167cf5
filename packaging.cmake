# Installing and packaging: `cmake --install` puts the relay in bin/, the static helper where the relay
# looks for it (lib/maka-eval/, found from the relay's own location), the Harbor/Pier adapter, the JSON
# Schemas and the README under share/; `cpack -G DEB` makes maka-eval-relay_<version>_amd64.deb from the same
# rules. The relay links libcrypto statically and the helper is fully static, so the package needs only
# the C and C++ runtimes.
install(TARGETS maka-eval-relay RUNTIME DESTINATION bin)
install(PROGRAMS $<TARGET_FILE:maka-eval-helper> DESTINATION lib/maka-eval)
install(DIRECTORY contracts/schema/ DESTINATION share/maka-eval/schema FILES_MATCHING PATTERN "*.json")
install(DIRECTORY relay/harbor/maka_eval_relay DESTINATION share/maka-eval/harbor
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
# The drop-in for apache/maka's bundled relay_agent.py (docs/harbor-pier.md).
install(FILES relay/harbor/relay_agent.py DESTINATION share/maka-eval/harbor)
install(FILES README.md DESTINATION share/doc/maka-eval-relay)
install(DIRECTORY docs/ DESTINATION share/doc/maka-eval-relay/docs)

set(CPACK_PACKAGE_NAME maka-eval-relay)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "maka-eval maintainers <maka-eval@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "relay agent and in-container helper that run one evaluation subject and bring its result back")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # maka-eval-relay_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1 (>= 3.0)")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "docker.io, python3")
set(CPACK_STRIP_FILES bin/maka-eval-relay)
include(CPack)
