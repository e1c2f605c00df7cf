package messages

import (
	"testing"
)

func TestOpenAIError(t *testing.T) {
	for _, tc := range []struct {
		status     int
		body       string
		wantStatus int
		wantType   string
		wantMsg    string
	}{
		{400, `{"error":{"message":"Invalid value for 'messages[1].role'.","type":"invalid_request_error","param":"messages[1].role","code":"invalid_value"}}`, 400, InvalidRequest, "Invalid value for 'messages[1].role'."},
		{422, `{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":{}}]}`, 400, InvalidRequest, "body.messages: Field required"},
		{401, `{"error":{"message":"Incorrect API key provided: sk-proj-********************************************Xy9Z. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, 401, Authentication, "Incorrect API key provided: xxxxx. You can find your API key at https://platform.openai.com/account/api-keys."},
		{403, `{"error":{"message":"Project proj_abc does not have access to model gpt-5","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, 403, Permission, "Project proj_abc does not have access to model gpt-5"},
		{404, `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`, 404, NotFound, `model "llama9" not found, try pulling it first`},
		{404, `{"error":"model 'qwen' not found"}`, 404, NotFound, "model 'qwen' not found"},
		{429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, 429, RateLimit, "You exceeded your current quota, please check your plan and billing details."},
		{500, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`, 500, APIErrorType, "The server had an error while processing your request. Sorry about that!"},
		{502, `<html><body>Bad Gateway</body></html>`, 500, APIErrorType, "Bad Gateway"},
		{503, `{"object":"error","message":"The server is overloaded","type":"ServiceUnavailableError","param":null,"code":503}`, 529, Overloaded, "The server is overloaded"},
		{500, `{"error":{"code":500,"message":"Bearer abc.def-123 rejected by the proxy","type":"server_error"}}`, 500, APIErrorType, "Bearer xxxxx rejected by the proxy"},
		{400, `plain text error`, 400, InvalidRequest, "plain text error"},
		{500, ``, 500, APIErrorType, "Internal Server Error"},
	} {
		e := OpenAIError(tc.status, []byte(tc.body))
		if e.Status != tc.wantStatus || e.Type != tc.wantType || e.Message != tc.wantMsg {
			t.Errorf("%d %s:\n got %d %s %q\nwant %d %s %q", tc.status, tc.body, e.Status, e.Type, e.Message, tc.wantStatus, tc.wantType, tc.wantMsg)
		}
	}
}
