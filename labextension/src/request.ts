/**
 * The one request helper: every call to the jobs API goes through {@link requestAPI}, and every
 * non-2xx answer becomes a {@link TfcApiError}.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** The API's URL namespace, under the server's base URL. */
export const NAMESPACE = 'tfc-jupyter';

/** The command that enables the server extension, shown when it is missing. */
export const ENABLE_COMMAND = 'jupyter server extension enable tfc_jupyter';

/** An error answer of the jobs API (or no answer at all). */
export class TfcApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly error: string = 'Error',
    readonly hint: string = '',
    readonly field: string | null = null
  ) {
    super(message);
    this.name = 'TfcApiError';
  }

  /** True when the server has no tfc_jupyter extension (its routes are not there). */
  get serverMissing(): boolean {
    return this.error === 'ServerExtensionMissing';
  }

  /** Message and fix, one line. */
  get text(): string {
    return this.hint ? `${this.message}. Fix: ${this.hint}` : this.message;
  }
}

/**
 * Call the jobs API and decode its JSON answer.
 *
 * @param endPoint - path under /tfc-jupyter/, with any query string
 * @param init - fetch options (method, body)
 * @throws TfcApiError for a non-2xx answer or a network failure
 */
export async function requestAPI<T>(endPoint: string, init: RequestInit = {}): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, NAMESPACE, endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new TfcApiError(`the Jupyter server did not answer (${error})`, 0, 'NetworkError');
  }
  const text = await response.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.ok) {
    return data as T;
  }
  if (response.status === 404 && !(data && data.error)) {
    // Jupyter's own 404 page: our routes are not registered.
    throw new TfcApiError(
      'the tfc_jupyter server extension is not enabled on this Jupyter server',
      404,
      'ServerExtensionMissing',
      `run \`${ENABLE_COMMAND}\` and restart JupyterLab`
    );
  }
  throw new TfcApiError(
    (data && data.message) || response.statusText || `HTTP ${response.status}`,
    response.status,
    (data && data.error) || 'HTTPError',
    (data && data.hint) || '',
    (data && data.field) || null
  );
}
