#include "node/daemon.h"

#include "node/daemon_impl.h"

namespace murmur::node {

Daemon::Daemon(std::unique_ptr<DaemonImpl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() = default;

Result<std::unique_ptr<Daemon>> Daemon::Create(const proto::NodeConfig& config) {
  auto impl = std::make_unique<DaemonImpl>(config);
  MURMUR_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

Status Daemon::Run(bool handle_signals) { return impl_->Run(handle_signals); }
void Daemon::RequestStop() { impl_->RequestStop(); }
Status Daemon::ReloadCertificate() {
  std::promise<Status> result;
  asio::post(impl_->io_, [&] { result.set_value(impl_->ReloadCertificate("reload requested")); });
  return result.get_future().get();
}
std::uint16_t Daemon::port() const { return impl_->transport_->port(); }
std::uint16_t Daemon::metrics_port() const { return impl_->metrics_->port(); }
std::uint16_t Daemon::control_port() const { return impl_->control_->port(); }
std::uint64_t Daemon::rounds_done() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->job_ ? impl_->job_->rounds_done() : 0;
}
double Daemon::last_accuracy() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->job_ ? impl_->job_->accuracy() : -1;
}
std::vector<std::uint64_t> Daemon::peer_draws() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->job_ ? impl_->job_->peer_draws() : std::vector<std::uint64_t>{};
}
std::vector<float> Daemon::params() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->job_ ? impl_->job_->params() : std::vector<float>{};
}

}  // namespace murmur::node
