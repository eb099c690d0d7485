/**
 * The one request helper: every call to the jobs API goes through {@link requestAPI}, and every
 * non-2xx answer becomes a {@link TfcApiError}.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { IFix } from './types';

/** The API's URL namespace, under the server's base URL. */
export const NAMESPACE = 'tfc-jupyter';

/** The command that enables the server extension, shown when it is missing. */
export const ENABLE_COMMAND = 'jupyter server extension enable tfc_jupyter';

/**
 * An error and its fix as the UI says them: `ui_message`/`ui_hint` when the server gives them
 * (the UI's own words: "set Workers to 0"), else `message`/`hint` (the magic's: "drop --workers").
 */
export function errorText(body: {
  message: string;
  hint?: string | null;
  ui_message?: string | null;
  ui_hint?: string | null;
}): string {
  const message = body.ui_message || body.message;
  const hint = body.ui_hint || body.hint;
  return hint ? `${message}. Fix: ${hint}` : message;
}

/** An error answer of the jobs API (or no answer at all). */
export class TfcApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly error: string = 'Error',
    readonly hint: string = '',
    readonly field: string | null = null,
    /** The message and the fix in the UI's own words, when the server gives them. */
    readonly ui: { message?: string | null; hint?: string | null } = {},
    /** The fix as data, when the server gives it so (the form applies one with a click). */
    readonly fixes: IFix[] = []
  ) {
    super(message);
    this.name = 'TfcApiError';
  }

  /** True when the server has no tfc_jupyter extension (its routes are not there). */
  get serverMissing(): boolean {
    return this.error === 'ServerExtensionMissing';
  }

  /** Message and fix, one line, in the UI's words when the server gave them. */
  get text(): string {
    return errorText({
      message: this.message,
      hint: this.hint,
      ui_message: this.ui.message,
      ui_hint: this.ui.hint
    });
  }
}

/**
 * Call the jobs API and decode its JSON answer.
 *
 * @param endPoint - path under /tfc-jupyter/, with any query string
 * @param init - fetch options (method, body)
 * @throws TfcApiError for a non-2xx answer or a network failure
 */
export async function requestAPI<T>(
  endPoint: string,
  init: RequestInit = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, NAMESPACE, endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new TfcApiError(
      `the Jupyter server did not answer (${error})`,
      0,
      'NetworkError'
    );
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
    (data && data.field) || null,
    { message: data && data.ui_message, hint: data && data.ui_hint },
    (data && Array.isArray(data.fixes) && data.fixes) || []
  );
}
