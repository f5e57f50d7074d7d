// The one place node/ includes Asio: standalone Asio 1.22 (libasio-dev),
// without Boost and without the deprecated interfaces.
#pragma once

#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif
#ifndef ASIO_NO_DEPRECATED
#define ASIO_NO_DEPRECATED
#endif
#include <asio.hpp>
