// Certificate renewal without a restart (docs/daemon.md "Certificate
// renewal"): the checks a renewed node certificate must pass before a daemon
// presents it instead of the one it runs with.
//
// A renewal is accepted when the file parses as a certificate
// (crypto::LoadCertificateFile) and the certificate is signed by the
// network's coordinator key, is for this network, is valid now (not before
// not_before, not at or after not_after), names this daemon's identity key
// (the key its peers and membership know it by), binds this daemon's node
// id (CheckOwnCertificate) and carries exactly the roles of the current
// certificate. Anything else is refused with a Status naming the
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

// The certificate a daemon presents must bind its own node id `self`:
// PermissionDenied when it binds another. A version 1 certificate binds none:
// OK with *legacy set (peers accept it only where they pin this node's key,
// so the daemon warns).
Status CheckOwnCertificate(const crypto::Certificate& cert, std::uint32_t self, bool* legacy);

// "serial 7, node 3, roles node, valid until 2026-12-01T00:00:00Z": for logs and the operator.
std::string DescribeCertificate(const crypto::Certificate& cert);

}  // namespace murmur::node
