# Installed like a tool: `cmake --install build --prefix P` puts papaya in
# P/bin and its data (configs, catalogs, schemas) in P/share/papaya, where
# the program finds them from its own folder (model/json_file.h). `cpack -G
# DEB` in the build folder makes a Debian package of the same, installed
# under /usr, whose dependencies are the Debian packages of the shared
# libraries papaya links (dpkg-shlibdeps).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/papaya)

set(CPACK_PACKAGE_NAME papaya)
set(CPACK_PACKAGE_VENDOR papaya)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "which memory optimizations to train a network with, at what batch size, how fast - and training with them")
set(CPACK_PACKAGE_CONTACT "papaya developers <papaya@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
include(CPack)
