#include "net/remote_error.h"

#include "trib/core/error.h"

namespace trib::net {

RemoteErrorCode remote_error_code(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ShapeError&) {
    return RemoteErrorCode::shape_error;
  } catch (const InvalidArgument&) {
    return RemoteErrorCode::invalid_argument;
  } catch (const NotFound&) {
    return RemoteErrorCode::not_found;
  } catch (const IoError&) {
    return RemoteErrorCode::io_error;
  } catch (const Corruption&) {
    return RemoteErrorCode::corruption;
  } catch (const Timeout&) {
    return RemoteErrorCode::timeout;
  } catch (const Unavailable&) {
    return RemoteErrorCode::unavailable;
  } catch (const Unauthenticated&) {
    return RemoteErrorCode::unauthenticated;
  } catch (...) {
    return RemoteErrorCode::error;
  }
}

std::exception_ptr make_remote_error(std::uint32_t code, const std::string& message) {
  switch (static_cast<RemoteErrorCode>(code)) {
    case RemoteErrorCode::invalid_argument: return std::make_exception_ptr(InvalidArgument(message));
    case RemoteErrorCode::shape_error: return std::make_exception_ptr(ShapeError(message));
    case RemoteErrorCode::not_found: return std::make_exception_ptr(NotFound(message));
    case RemoteErrorCode::io_error: return std::make_exception_ptr(IoError(message));
    case RemoteErrorCode::corruption: return std::make_exception_ptr(Corruption(message));
    case RemoteErrorCode::timeout: return std::make_exception_ptr(Timeout(message));
    case RemoteErrorCode::unavailable: return std::make_exception_ptr(Unavailable(message));
    case RemoteErrorCode::unauthenticated:
      return std::make_exception_ptr(Unauthenticated(message));
    case RemoteErrorCode::error: break;
  }
  return std::make_exception_ptr(Error(message));
}

}  // namespace trib::net
