/**
 * src/request.ts: the error text, TfcApiError and every answer requestAPI can get. The Jupyter
 * server connection is mocked at the module edge (@jupyterlab/services); URL joining is the
 * real URLExt.
 */
import { ServerConnection } from '@jupyterlab/services';

import {
  ENABLE_COMMAND,
  errorText,
  NAMESPACE,
  requestAPI,
  TfcApiError
} from '../request';

jest.mock('@jupyterlab/services', () => ({
  ServerConnection: {
    makeSettings: jest.fn(),
    makeRequest: jest.fn()
  }
}));

const BASE_URL = 'http://localhost:8888/user/me/';
const settings = { baseUrl: BASE_URL } as ServerConnection.ISettings;
const makeSettings = ServerConnection.makeSettings as jest.Mock;
const makeRequest = ServerConnection.makeRequest as jest.Mock;

/** The server answers `body` (a string as is, anything else as JSON). */
function answer(status: number, body: unknown = '', statusText = ''): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  makeRequest.mockResolvedValue(
    new Response(status === 204 ? null : text, { status, statusText })
  );
}

/** The TfcApiError requestAPI throws. */
async function failure(endPoint = 'jobs'): Promise<TfcApiError> {
  const error = await requestAPI(endPoint).then(
    () => null,
    (e: unknown) => e
  );
  expect(error).toBeInstanceOf(TfcApiError);
  return error as TfcApiError;
}

beforeEach(() => {
  makeSettings.mockReset().mockReturnValue(settings);
  makeRequest.mockReset();
});

describe('errorText', () => {
  it('says the message and the fix', () => {
    expect(errorText({ message: 'no such machine', hint: 'pick T4_1X' })).toBe(
      'no such machine. Fix: pick T4_1X'
    );
  });

  it('says the message alone without a fix', () => {
    expect(errorText({ message: 'boom' })).toBe('boom');
    expect(errorText({ message: 'boom', hint: '' })).toBe('boom');
    expect(errorText({ message: 'boom', hint: null })).toBe('boom');
  });

  it("prefers the UI's own words", () => {
    expect(
      errorText({
        message: '--workers must be 0 on docker',
        hint: 'drop --workers',
        ui_message: 'Workers must be 0 on docker',
        ui_hint: 'set Workers to 0'
      })
    ).toBe('Workers must be 0 on docker. Fix: set Workers to 0');
  });

  it("falls back to the magic's words for each part the UI lacks", () => {
    expect(
      errorText({
        message: 'm',
        hint: 'h',
        ui_message: '',
        ui_hint: 'ui h'
      })
    ).toBe('m. Fix: ui h');
    expect(
      errorText({ message: 'm', hint: 'h', ui_message: 'ui m', ui_hint: null })
    ).toBe('ui m. Fix: h');
  });
});

describe('TfcApiError', () => {
  it('has defaults for everything but the message and status', () => {
    const error = new TfcApiError('broken', 500);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('TfcApiError');
    expect(error.message).toBe('broken');
    expect(error.status).toBe(500);
    expect(error.error).toBe('Error');
    expect(error.hint).toBe('');
    expect(error.field).toBeNull();
    expect(error.ui).toEqual({});
    expect(error.serverMissing).toBe(false);
    expect(error.text).toBe('broken');
  });

  it('says the server extension is missing only for ServerExtensionMissing', () => {
    expect(
      new TfcApiError('x', 404, 'ServerExtensionMissing').serverMissing
    ).toBe(true);
    expect(new TfcApiError('x', 404, 'JobNotFound').serverMissing).toBe(false);
  });

  it("says message and fix in the UI's words when it has them", () => {
    const error = new TfcApiError(
      '--gpus needs a GPU machine',
      400,
      'SpecError',
      'pass --machine T4_1X',
      'gpus',
      { message: 'GPUs needs a GPU machine', hint: null }
    );
    expect(error.text).toBe(
      'GPUs needs a GPU machine. Fix: pass --machine T4_1X'
    );
  });
});

describe('requestAPI', () => {
  it('calls the endpoint under the namespace with the init and settings', async () => {
    answer(200, { jobs: [] });
    const init = { method: 'POST', body: '{}' };
    await requestAPI('jobs?limit=5', init);
    expect(makeRequest).toHaveBeenCalledTimes(1);
    expect(makeRequest).toHaveBeenCalledWith(
      `${BASE_URL}${NAMESPACE}/jobs?limit=5`,
      init,
      settings
    );
    expect(NAMESPACE).toBe('tfc-jupyter');
  });

  it('sends an empty init by default', async () => {
    answer(200, {});
    await requestAPI('defaults');
    expect(makeRequest.mock.calls[0][1]).toEqual({});
  });

  it('decodes a JSON answer', async () => {
    answer(201, { job: { id: 'a1' }, plan: { line: '%%tfc_run' } });
    await expect(requestAPI('jobs', { method: 'POST' })).resolves.toEqual({
      job: { id: 'a1' },
      plan: { line: '%%tfc_run' }
    });
  });

  it('gives null for an empty or non-JSON success', async () => {
    answer(200, '');
    await expect(requestAPI('jobs')).resolves.toBeNull();
    answer(204);
    await expect(requestAPI('jobs')).resolves.toBeNull();
    answer(200, '<html>not json</html>');
    await expect(requestAPI('jobs')).resolves.toBeNull();
  });

  it("turns an error body into a TfcApiError with all of the server's fields", async () => {
    answer(
      400,
      {
        error: 'SpecError',
        message: '--workers must be 0 on docker',
        hint: 'drop --workers',
        field: 'workers',
        ui_message: 'Workers must be 0 on docker',
        ui_hint: 'set Workers to 0'
      },
      'Bad Request'
    );
    const error = await failure();
    expect(error.status).toBe(400);
    expect(error.error).toBe('SpecError');
    expect(error.message).toBe('--workers must be 0 on docker');
    expect(error.hint).toBe('drop --workers');
    expect(error.field).toBe('workers');
    expect(error.ui).toEqual({
      message: 'Workers must be 0 on docker',
      hint: 'set Workers to 0'
    });
    expect(error.serverMissing).toBe(false);
    expect(error.text).toBe(
      'Workers must be 0 on docker. Fix: set Workers to 0'
    );
  });

  it('keeps a 404 of the jobs API (an unknown job) as it is', async () => {
    answer(
      404,
      { error: 'JobNotFound', message: 'no job abc', hint: 'list the jobs' },
      'Not Found'
    );
    const error = await failure('jobs/abc');
    expect(error.status).toBe(404);
    expect(error.error).toBe('JobNotFound');
    expect(error.message).toBe('no job abc');
    expect(error.serverMissing).toBe(false);
  });

  it("reads Jupyter's own 404 page as the server extension missing", async () => {
    answer(404, '<html>404 : Not Found</html>', 'Not Found');
    const error = await failure();
    expect(error.status).toBe(404);
    expect(error.error).toBe('ServerExtensionMissing');
    expect(error.serverMissing).toBe(true);
    expect(error.message).toBe(
      'the tfc_jupyter server extension is not enabled on this Jupyter server'
    );
    expect(error.hint).toBe(`run \`${ENABLE_COMMAND}\` and restart JupyterLab`);
    expect(ENABLE_COMMAND).toBe('jupyter server extension enable tfc_jupyter');
  });

  it('reads a 404 with a JSON body but no error class as the extension missing', async () => {
    answer(404, { message: 'Not Found' }, 'Not Found');
    expect((await failure()).serverMissing).toBe(true);
  });

  it('falls back to the status text, then the status, without an error body', async () => {
    answer(500, '<html>Internal Server Error</html>', 'Internal Server Error');
    let error = await failure();
    expect(error.status).toBe(500);
    expect(error.message).toBe('Internal Server Error');
    expect(error.error).toBe('HTTPError');
    expect(error.hint).toBe('');
    expect(error.field).toBeNull();
    expect(error.text).toBe('Internal Server Error');

    answer(502, '');
    error = await failure();
    expect(error.message).toBe('HTTP 502');
    expect(error.error).toBe('HTTPError');
  });

  it('turns no answer at all into a NetworkError of status 0', async () => {
    makeRequest.mockRejectedValue(new TypeError('Failed to fetch'));
    const error = await failure();
    expect(error.status).toBe(0);
    expect(error.error).toBe('NetworkError');
    expect(error.message).toBe(
      'the Jupyter server did not answer (TypeError: Failed to fetch)'
    );
    expect(error.serverMissing).toBe(false);
  });
});
