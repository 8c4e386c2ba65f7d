package bedrocksim

import (
	"net/http"
)

// Error codes, as Bedrock sends them in X-Amzn-ErrorType (docs/BEDROCK.md B); in a stream's
// :exception-type the first letter is lower case.
const (
	codeValidation         = "ValidationException"
	codeAccessDenied       = "AccessDeniedException"
	codeResourceNotFound   = "ResourceNotFoundException"
	codeUnknownOperation   = "UnknownOperationException"
	codeThrottling         = "ThrottlingException"
	codeModelNotReady      = "ModelNotReadyException"
	codeModelTimeout       = "ModelTimeoutException"
	codeModelStreamError   = "ModelStreamErrorException"
	codeInternalServer     = "InternalServerException"
	codeServiceUnavailable = "ServiceUnavailableException"
)

// apiError is an answer Bedrock gives instead of a result: its code, HTTP status and message.
type apiError struct {
	Code    string
	Status  int
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// validation is a ValidationException: HTTP 400 with Bedrock's text.
func validation(msg string) *apiError {
	return &apiError{Code: codeValidation, Status: http.StatusBadRequest, Message: msg}
}

// writeError answers like Bedrock's REST JSON protocol: the code in X-Amzn-ErrorType, the
// text in the body's message.
func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", e.Code)
	w.WriteHeader(e.Status)
	_, _ = w.Write(marshal(errorBody{Message: e.Message}))
}
