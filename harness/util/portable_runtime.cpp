// Linked into the portable build only (cmake/portable.cmake, docs/portable.md). A static glibc
// runs on hosts whose own libc is another version, so before main it is kept off what would
// load that host's shared objects, and told where the host keeps its CA bundle.
#include <nss.h>
#include <openssl/x509.h>

#include <array>
#include <cstdlib>
#include <sys/stat.h>

namespace {

bool exists(const char* path) {
    struct stat info {};
    return ::stat(path, &info) == 0;
}

// OpenSSL's compiled-in defaults are Debian's (/usr/lib/ssl); SUSE, RHEL and Alpine keep the
// bundle elsewhere. SSL_CERT_FILE and SSL_CERT_DIR, when set, are the user's and win.
void point_openssl_at_the_host_ca_bundle() {
    if (std::getenv("SSL_CERT_FILE") != nullptr || std::getenv("SSL_CERT_DIR") != nullptr || exists(X509_get_default_cert_file())) {
        return;
    }
    constexpr std::array bundles{
        "/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine, Arch
        "/etc/pki/tls/certs/ca-bundle.crt",   // RHEL, Fedora, Rocky
        "/etc/ssl/ca-bundle.pem",             // SUSE, Cray OS
        "/etc/pki/tls/cacert.pem",            // OpenELEC
        "/etc/ssl/cert.pem",                  // Alpine, BSD-style
    };
    for (const char* bundle : bundles) {
        if (exists(bundle)) {
            ::setenv("SSL_CERT_FILE", bundle, 0);
            return;
        }
    }
}

// glibc 2.34+ carries the files and dns modules inside libc.a; any other module an nsswitch.conf
// names (sss, systemd, mymachines, ldap) would be dlopened from the host, built for another
// glibc. The harness resolves hosts (submit, libgit2 fetches) and, when $HOME is unset, its own
// user (libgit2): the built-in modules alone serve both.
void use_only_builtin_nss_modules() {
    ::__nss_configure_lookup("hosts", "files dns");
    ::__nss_configure_lookup("passwd", "files");
    ::__nss_configure_lookup("group", "files");
}

[[maybe_unused]] const bool k_configured = [] {
    use_only_builtin_nss_modules();
    point_openssl_at_the_host_ca_bundle();
    return true;
}();

} // namespace
