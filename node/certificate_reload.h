// Certificate renewal without a restart (docs/daemon.md "Certificate
// renewal"): the checks a renewed node certificate must pass before a daemon
// presents it instead of the one it runs with.
//
// A renewal is accepted when the file parses as a certificate
// (crypto::LoadCertificateFile) and the certificate is signed by the
// network's coordinator key, is for this network, is valid now (not before
// not_before, not at or after not_after), names this daemon's identity key
// (the key its peers and membership know it by; a node id is not part of a
// certificate: HELLO binds it per session) and carries exactly the roles of
// the current certificate. Anything else is refused with a Status naming the
// file and the check, and the caller keeps the current credentials.
//
// Thread-safety: functions of their arguments (LoadRenewedCredentials reads a file).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "crypto/handshake.h"

namespace murmur::node {

// Checks `renewed` against `current` (the credentials in use) and `policy`
// (network id and coordinator key; its required_roles are not used) at Unix
// time `now`. Unauthenticated (bad signature, not yet valid, expired),
// PermissionDenied (another network, another node key, other roles).
Status CheckRenewal(const crypto::Credentials& current, const crypto::Certificate& renewed,
                    const crypto::TrustPolicy& policy, std::int64_t now);

// Reads the certificate at `path`, checks it with CheckRenewal and returns
// the credentials to present from now on: the current identity and Noise
// static key with the renewed certificate. Errors name `path`.
Result<crypto::Credentials> LoadRenewedCredentials(const std::string& path,
                                                   const crypto::Credentials& current,
                                                   const crypto::TrustPolicy& policy, std::int64_t now);

// "serial 7, roles node, valid until 2026-12-01T00:00:00Z": for logs and the operator.
std::string DescribeCertificate(const crypto::Certificate& cert);

}  // namespace murmur::node
