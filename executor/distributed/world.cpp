#include "executor/distributed/world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "model/error.h"

namespace papaya::executor {
namespace {

std::optional<std::string> variable(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::optional<std::string>(value) : std::nullopt;
}

int number(const char* name, int fallback) {
  const auto text = variable(name);
  if (!text) return fallback;
  try {
    size_t used = 0;
    const int value = std::stoi(*text, &used);
    if (used == text->size()) return value;
  } catch (const std::exception&) {
  }
  throw InputError("environment variable " + std::string(name) + "='" + *text + "': expected a whole number");
}

}  // namespace

std::optional<World> world_from_environment() {
  if (!variable("WORLD_SIZE")) return std::nullopt;
  World w;
  w.size = number("WORLD_SIZE", 1);
  w.rank = number("RANK", 0);
  w.local_rank = number("LOCAL_RANK", w.rank);
  w.master_addr = variable("MASTER_ADDR").value_or(w.master_addr);
  w.master_port = number("MASTER_PORT", w.master_port);
  if (w.size < 1 || w.rank < 0 || w.rank >= w.size) {
    throw InputError("RANK=" + std::to_string(w.rank) + " WORLD_SIZE=" + std::to_string(w.size) +
                     ": a rank is 0 to WORLD_SIZE - 1");
  }
  if (w.master_port < 1 || w.master_port > 65535) {
    throw InputError("MASTER_PORT=" + std::to_string(w.master_port) + ": not a TCP port");
  }
  return w;
}

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) close(fd);
  if (!ok) throw InputError("no free loopback port for the ranks to meet at");
  return ntohs(address.sin_port);
}

}  // namespace papaya::executor
