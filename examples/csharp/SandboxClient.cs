// A small hand-written HttpClient SDK for the fault matrix's API (conformance/faults/spec.yaml), in the
// shape .NET SDK teams write by hand: one client class over an HttpClient the caller configures
// (base address, handlers), typed methods per operation, an exception for error statuses, and a
// per-call hook for request options. It knows nothing of retrygen: RetryHandler is installed by the
// caller in the HttpClient it passes (see Program.cs and README.md).

namespace Sandbox.Sdk
{
    using System;
    using System.Net.Http;
    using System.Text;
    using System.Threading;
    using System.Threading.Tasks;

    /// <summary>An error status from the API.</summary>
    public sealed class SandboxApiException : Exception
    {
        /// <summary>Initializes a new instance of the <see cref="SandboxApiException"/> class.</summary>
        /// <param name="status">The response's status.</param>
        /// <param name="body">The response's body.</param>
        /// <param name="response">The response, kept for its request's options.</param>
        public SandboxApiException(int status, string body, HttpResponseMessage response)
            : base("the API answered " + status + ": " + body)
        {
            Status = status;
            Body = body;
            Response = response;
        }

        /// <summary>Gets the response's status.</summary>
        public int Status { get; }

        /// <summary>Gets the response's body.</summary>
        public string Body { get; }

        /// <summary>Gets the response (its content already read).</summary>
        public HttpResponseMessage Response { get; }
    }

    /// <summary>The sandbox API over an <see cref="HttpClient"/> whose <see cref="HttpClient.BaseAddress"/> is the API's base URL.</summary>
    public sealed class SandboxClient
    {
        private readonly HttpClient http;

        /// <summary>Initializes a new instance of the <see cref="SandboxClient"/> class.</summary>
        /// <param name="http">The client: its base address ends with <c>/</c>, its handlers are the caller's.</param>
        public SandboxClient(HttpClient http)
        {
            this.http = http ?? throw new ArgumentNullException(nameof(http));
        }

        /// <summary>GET /sandboxes/{sandboxID}.</summary>
        /// <param name="sandboxId">The sandbox.</param>
        /// <param name="options">Changes the request before it is sent (headers, request options), or <c>null</c>.</param>
        /// <param name="cancellationToken">Cancels the call.</param>
        /// <returns>The body.</returns>
        public Task<string> GetSandboxAsync(string sandboxId, Action<HttpRequestMessage> options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return SendAsync(HttpMethod.Get, "sandboxes/" + Uri.EscapeDataString(sandboxId), null, options, cancellationToken);
        }

        /// <summary>POST /sandboxes.</summary>
        /// <param name="image">The image to start from.</param>
        /// <param name="options">Changes the request before it is sent, or <c>null</c>.</param>
        /// <param name="cancellationToken">Cancels the call.</param>
        /// <returns>The body.</returns>
        public Task<string> CreateSandboxAsync(string image, Action<HttpRequestMessage> options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return SendAsync(HttpMethod.Post, "sandboxes", "{\"image\":" + Quote(image) + "}", options, cancellationToken);
        }

        /// <summary>POST /sandboxes/{sandboxID}/snapshots (keyed by <c>Idempotency-Key</c>).</summary>
        /// <param name="sandboxId">The sandbox.</param>
        /// <param name="name">The snapshot's name.</param>
        /// <param name="options">Changes the request before it is sent, or <c>null</c>.</param>
        /// <param name="cancellationToken">Cancels the call.</param>
        /// <returns>The body.</returns>
        public Task<string> SnapshotSandboxAsync(string sandboxId, string name, Action<HttpRequestMessage> options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            return SendAsync(HttpMethod.Post, "sandboxes/" + Uri.EscapeDataString(sandboxId) + "/snapshots", "{\"name\":" + Quote(name) + "}", options, cancellationToken);
        }

        private static string Quote(string value)
        {
            var text = new StringBuilder("\"");
            foreach (char c in value)
            {
                if (c == '"' || c == '\\')
                {
                    text.Append('\\').Append(c);
                }
                else if (c < ' ')
                {
                    text.Append("\\u").Append(((int)c).ToString("x4", System.Globalization.CultureInfo.InvariantCulture));
                }
                else
                {
                    text.Append(c);
                }
            }

            return text.Append('"').ToString();
        }

        private async Task<string> SendAsync(HttpMethod method, string path, string json, Action<HttpRequestMessage> options, CancellationToken cancellationToken)
        {
            var request = new HttpRequestMessage(method, path);
            if (json != null)
            {
                request.Content = new StringContent(json, Encoding.UTF8, "application/json");
            }

            if (options != null)
            {
                options(request);
            }

            // ResponseContentRead (HttpClient's default): the body is read before SendAsync returns.
            HttpResponseMessage response = await http.SendAsync(request, cancellationToken).ConfigureAwait(false);
            string body = await response.Content.ReadAsStringAsync().ConfigureAwait(false);
            if (!response.IsSuccessStatusCode)
            {
                throw new SandboxApiException((int)response.StatusCode, body, response);
            }

            return body;
        }
    }
}
