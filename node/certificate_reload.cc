#include "node/certificate_reload.h"

#include <ctime>

namespace murmur::node {

Status CheckRenewal(const crypto::Credentials& current, const crypto::Certificate& renewed,
                    const crypto::TrustPolicy& policy, std::int64_t now) {
  MURMUR_RETURN_IF_ERROR(crypto::VerifyCertificate(renewed, policy.coordinator_key, policy.network_id, now));
  if (renewed.node_key != current.identity.public_key()) {
    return Status::PermissionDenied("certificate is for node key " +
                                    crypto::ToHex(renewed.node_key).substr(0, 16) +
                                    "..., this daemon's identity is " +
                                    crypto::ToHex(current.identity.public_key()).substr(0, 16) + "...");
  }
  if (current.certificate.BindsNodeId() && renewed.node_id != current.certificate.node_id) {
    return Status::PermissionDenied(
        "certificate binds node id " + (renewed.BindsNodeId() ? std::to_string(renewed.node_id) : "none") +
        ", the current one " + std::to_string(current.certificate.node_id) + ": a renewal keeps the node id");
  }
  if (renewed.roles != current.certificate.roles) {
    return Status::PermissionDenied("certificate has roles " + crypto::RolesToString(renewed.roles) +
                                    ", the current one " + crypto::RolesToString(current.certificate.roles) +
                                    ": a renewal keeps the roles");
  }
  return Status::Ok();
}

Result<crypto::Credentials> LoadRenewedCredentials(const std::string& path,
                                                   const crypto::Credentials& current,
                                                   const crypto::TrustPolicy& policy, std::int64_t now) {
  const std::string where = "certificate '" + path + "'";
  auto renewed = crypto::LoadCertificateFile(path);
  if (!renewed.ok()) return renewed.status().WithContext(where);
  MURMUR_RETURN_IF_ERROR(CheckRenewal(current, *renewed, policy, now).WithContext(where));
  // The Noise static key stays: only the certificate that binds the identity changes.
  auto made = crypto::Credentials::Make(current.identity, *renewed, current.static_key);
  if (!made.ok()) return made.status().WithContext(where);
  return made;
}

Status CheckOwnCertificate(const crypto::Certificate& cert, std::uint32_t self, bool* legacy) {
  *legacy = !cert.BindsNodeId();
  if (*legacy || cert.node_id == self) return Status::Ok();
  return Status::PermissionDenied("certificate serial " + std::to_string(cert.serial) + " is for node " +
                                  std::to_string(cert.node_id) + ", but this daemon's node_id is " +
                                  std::to_string(self));
}

std::string DescribeCertificate(const crypto::Certificate& cert) {
  char until[32] = "?";
  const std::time_t t = static_cast<std::time_t>(cert.not_after);
  std::tm tm{};
  if (gmtime_r(&t, &tm) != nullptr) std::strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
  const std::string node = cert.BindsNodeId() ? std::to_string(cert.node_id) : std::string("none");
  return "serial " + std::to_string(cert.serial) + ", node " + node + ", roles " +
         crypto::RolesToString(cert.roles) + ", valid until " + until;
}

}  // namespace murmur::node
