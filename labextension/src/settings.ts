/**
 * The extension's user settings (schema/plugin.json): default backend, machine and region.
 */
import { ISettingRegistry } from '@jupyterlab/settingregistry';

/** Launch defaults; empty strings leave the server's defaults in place. */
export interface ILaunchSettings {
  backend: string;
  machine: string;
  region: string;
}

/** The settings now (updated in place when the user edits them). */
export function trackSettings(
  registry: ISettingRegistry | null,
  pluginId: string
): ILaunchSettings {
  const current: ILaunchSettings = { backend: '', machine: '', region: '' };
  if (!registry) {
    return current;
  }
  const update = (settings: ISettingRegistry.ISettings): void => {
    current.backend = String(settings.get('backend').composite ?? '');
    current.machine = String(settings.get('machine').composite ?? '');
    current.region = String(settings.get('region').composite ?? '');
  };
  registry
    .load(pluginId)
    .then(settings => {
      update(settings);
      settings.changed.connect(update);
    })
    .catch(reason =>
      console.warn(`tfc-jupyter: settings not loaded: ${reason}`)
    );
  return current;
}
